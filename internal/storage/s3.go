package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// S3Config configures an S3 backend. Zero values are the documented
// defaults.
type S3Config struct {
	Bucket string // required
	Prefix string // put in front of every key; "" or key-like, a trailing "/" is added
	// Endpoint of an S3-compatible server ("http://127.0.0.1:7070"); "" is AWS.
	Endpoint       string
	Region         string // default us-east-1
	ForcePathStyle bool   // endpoint/bucket/key instead of bucket.endpoint/key
	CreateBucket   bool   // create the bucket if missing (an already-owned bucket is fine)
	PresignTTL     time.Duration
	// PartSize is the multipart part size and the single-PUT threshold:
	// bodies below PartSize go in one PutObject. Default and minimum 5 MiB
	// (the S3 limit), which keeps an upload's memory small; 10,000 parts
	// of 5 MiB allow 48 GiB objects.
	PartSize int64
	// Concurrency is the number of parts uploaded at once per upload;
	// the next part is read while they upload. Default 1. An upload holds
	// about (Concurrency+3)*PartSize bytes at its peak, 20 MiB with the
	// defaults: the transfer manager's Concurrency+1 part buffers plus the
	// first part, which it reads with io.ReadAll (up to twice its size
	// while the slice grows). The storage tests hold a 50 MB upload to
	// that bound (testLargeStream).
	Concurrency int
	// MaxAttempts bounds the SDK retryer (throttling, 5xx, connection
	// errors, 409 ConditionalRequestConflict); default 4.
	MaxAttempts int
	// MaxBackoff caps the delay between attempts; default 5s.
	MaxBackoff time.Duration
	// Credentials overrides the standard AWS chain (environment, shared
	// config, web identity, IMDS); tests pass static keys.
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// S3 stores objects in an S3 bucket (AWS or a compatible server).
//
// Create uploads through the transfer manager with If-None-Match: * on the
// PutObject (bodies up to one part) or on the CompleteMultipartUpload
// (larger bodies), so the server decides atomically which of two racing
// uploads wins; the loser's multipart upload is aborted. Replace sends
// If-Match the same way. A 409 ConditionalRequestConflict (two conditional
// writes in flight) is retried by the SDK retryer like a 503.
//
// One consequence of retries: if a conditional PUT succeeds but its
// response is lost, the retry gets 412 and Create reports ErrExists for an
// object it wrote itself. Callers treat ErrExists as success, so that is
// harmless.
type S3 struct {
	client   *s3.Client
	presign  *s3.PresignClient
	uploader *transfermanager.Client
	bucket   string
	prefix   string
	endpoint string
	region   string
	ttl      time.Duration
	log      *slog.Logger
}

var _ Backend = (*S3)(nil)

const (
	defaultPartSize    = 5 << 20
	minPartSize        = 5 << 20
	defaultConcurrency = 1
	defaultMaxAttempts = 4
	defaultMaxBackoff  = 5 * time.Second
	defaultPresignTTL  = time.Hour
	maxPresignTTL      = 7 * 24 * time.Hour
	abortTimeout       = 30 * time.Second
)

// NewS3 returns an S3 backend. It contacts the server only when
// CreateBucket is set.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if err := validBucket(c.Bucket); err != nil {
		return nil, err
	}
	prefix, err := normalizePrefix(c.Prefix)
	if err != nil {
		return nil, fmt.Errorf("storage: s3 %w", err)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("storage: S3 endpoint %q must be an http(s)://host[:port] URL", c.Endpoint)
		}
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	switch {
	case c.PresignTTL == 0:
		c.PresignTTL = defaultPresignTTL
	case c.PresignTTL < time.Second || c.PresignTTL > maxPresignTTL:
		return nil, fmt.Errorf("storage: presign TTL %s must be between 1s and %s", c.PresignTTL, maxPresignTTL)
	}
	switch {
	case c.PartSize == 0:
		c.PartSize = defaultPartSize
	case c.PartSize < minPartSize:
		return nil, fmt.Errorf("storage: S3 part size %d is below the 5 MiB minimum", c.PartSize)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = defaultConcurrency
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = defaultMaxAttempts
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = defaultMaxBackoff
	}

	opts := []func(*config.LoadOptions) error{
		config.WithRegion(c.Region),
		config.WithRetryer(func() aws.Retryer {
			r := retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = c.MaxAttempts
				o.MaxBackoff = c.MaxBackoff
			})
			return retry.AddWithErrorCodes(r, "ConditionalRequestConflict")
		}),
	}
	if c.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(c.Credentials))
	}
	if c.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(c.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("storage: loading AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.ForcePathStyle
		// Multipart objects carry a composite checksum the SDK cannot
		// check on a whole-object GET; it would log that on every Open.
		o.DisableLogOutputChecksumValidationSkipped = true
		if tracing.Enabled() {
			// The SDK's own spans (S3.PutObject, S3.UploadPart, …).
			o.TracerProvider = tracing.AWS(otel.GetTracerProvider())
		}
	})
	s := &S3{
		client:  client,
		presign: s3.NewPresignClient(client, s3.WithPresignExpires(c.PresignTTL)),
		uploader: transfermanager.New(client, func(o *transfermanager.Options) {
			o.PartSizeBytes = c.PartSize
			o.MultipartUploadThreshold = c.PartSize
			o.Concurrency = c.Concurrency
			// Abort a failed multipart upload with a fresh context, so a
			// cancelled caller still cleans up.
			o.FailTimeout = abortTimeout
		}),
		bucket:   c.Bucket,
		prefix:   prefix,
		endpoint: c.Endpoint,
		region:   c.Region,
		ttl:      c.PresignTTL,
		log:      orDiscard(c.Logger),
	}
	if c.CreateBucket {
		if err := s.createBucket(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// validBucket applies the S3 bucket naming rules that matter for URLs.
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("storage: S3 bucket %q must be 3 to 63 characters", b)
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return fmt.Errorf("storage: S3 bucket %q may hold only lower-case letters, digits, '-' and '.'", b)
		}
	}
	if first, last := b[0], b[len(b)-1]; first == '-' || first == '.' || last == '-' || last == '.' {
		return fmt.Errorf("storage: S3 bucket %q must start and end with a letter or digit", b)
	}
	return nil
}

// Client is the underlying S3 client (for tests and tooling).
func (s *S3) Client() *s3.Client { return s.client }

// Bucket is the bucket name.
func (s *S3) Bucket() string { return s.bucket }

// Prefix is the key prefix ("" or ending in "/").
func (s *S3) Prefix() string { return s.prefix }

// Describe names the bucket, prefix and endpoint.
func (s *S3) Describe() string {
	ep := s.endpoint
	if ep == "" {
		ep = "AWS"
	}
	return fmt.Sprintf("s3://%s/%s (endpoint %s, region %s)", s.bucket, s.prefix, ep, s.region)
}

func (s *S3) createBucket(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err == nil {
		return nil
	} else if httpStatus(err) != http.StatusNotFound {
		return fmt.Errorf("storage: checking bucket %s: %w", s.bucket, err)
	}
	in := &s3.CreateBucketInput{Bucket: &s.bucket}
	if s.region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(s.region)}
	}
	_, err := s.client.CreateBucket(ctx, in)
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) && apiCode(err) != "BucketAlreadyOwnedByYou" {
		return fmt.Errorf("storage: creating bucket %s: %w", s.bucket, err)
	}
	s.log.Info("created S3 bucket", "bucket", s.bucket)
	return nil
}

// Ping checks that the credentials reach the bucket (HeadBucket).
func (s *S3) Ping(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	switch {
	case err == nil:
		return nil
	case httpStatus(err) == http.StatusNotFound:
		return fmt.Errorf("storage: bucket %s does not exist (create it, or set S3_CREATE_BUCKET=true for development): %w", s.bucket, err)
	case httpStatus(err) == http.StatusForbidden:
		return fmt.Errorf("storage: access to bucket %s denied (check the AWS credentials): %w", s.bucket, err)
	default:
		return fmt.Errorf("storage: reaching bucket %s: %w", s.bucket, err)
	}
}

// Stat describes the object under key (HeadObject).
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	full, err := fullKey(s.prefix, key)
	if err != nil {
		return Object{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		if isNotFound(err) {
			return Object{}, fmt.Errorf("%w: %s", ErrNotFound, full)
		}
		return Object{}, fmt.Errorf("storage: stat %s: %w", full, err)
	}
	obj := Object{Key: full, ETag: unquote(aws.ToString(out.ETag)), Size: aws.ToInt64(out.ContentLength), Metadata: lowerKeys(out.Metadata)}
	if obj.URL, err = s.presignGet(ctx, full); err != nil {
		return Object{}, err
	}
	return obj, nil
}

// Open streams the object's content (GetObject).
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	full, err := fullKey(s.prefix, key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, full)
		}
		return nil, fmt.Errorf("storage: get %s: %w", full, err)
	}
	return out.Body, nil
}

// Create uploads r under key with If-None-Match: *.
func (s *S3) Create(ctx context.Context, key string, r io.Reader, o PutOptions) (Object, error) {
	return s.put(ctx, key, "", r, o)
}

// Replace uploads r under key with If-Match: ifMatchETag.
func (s *S3) Replace(ctx context.Context, key, ifMatchETag string, r io.Reader, o PutOptions) (Object, error) {
	if ifMatchETag == "" {
		return Object{}, errors.New("storage: Replace needs the ETag of the object it replaces (use Create for new objects)")
	}
	return s.put(ctx, key, ifMatchETag, r, o)
}

func (s *S3) put(ctx context.Context, key, ifMatch string, r io.Reader, o PutOptions) (Object, error) {
	full, err := fullKey(s.prefix, key)
	if err != nil {
		return Object{}, err
	}
	md, err := cleanMetadata(o.Metadata)
	if err != nil {
		return Object{}, err
	}
	body := &countingReader{r: ctxReader{ctx, r}}
	in := &transfermanager.UploadObjectInput{
		Bucket:      &s.bucket,
		Key:         &full,
		Body:        body,
		ContentType: aws.String(contentType(full, o)),
		Metadata:    md,
	}
	if cd := contentDisposition(o.FileName); cd != "" {
		in.ContentDisposition = &cd
	}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(quote(ifMatch))
	}
	out, err := s.uploader.UploadObject(ctx, in)
	if err != nil {
		if body.err != nil && !errors.Is(err, body.err) {
			// The transfer manager reports a read failure in its own words;
			// keep the source's error in the chain for callers.
			err = fmt.Errorf("%w (reading the body: %w)", err, body.err)
		}
		var mpu transfermanager.MultipartUploadError
		if errors.As(err, &mpu) && httpStatus(err) != http.StatusPreconditionFailed {
			// A lost race (412) fails after every part is in; anything
			// else may leave a part upload running on the server.
			s.ensureAborted(ctx, full, mpu.UploadID())
		}
		return Object{}, s.putError(full, ifMatch, err)
	}
	obj := Object{Key: full, ETag: unquote(aws.ToString(out.ETag)), Size: body.n, Metadata: md}
	if obj.URL, err = s.presignGet(ctx, full); err != nil {
		return Object{}, err
	}
	return obj, nil
}

// ensureAborted makes sure a failed multipart upload is gone. The transfer
// manager aborts it at once, but a part upload still running on the server
// (its request was cancelled, the server had the bytes already) may bring
// it back after the abort; S3 documents that an abort may have to be
// repeated. So: wait a moment, check with ListParts, abort again, a few
// times. It runs on a fresh context because the caller's is often the
// reason for the failure.
func (s *S3) ensureAborted(ctx context.Context, key, uploadID string) {
	if uploadID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	var err error
	for attempt := 1; attempt <= 4 && ctx.Err() == nil; attempt++ {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
		_, err = s.client.ListParts(ctx, &s3.ListPartsInput{Bucket: &s.bucket, Key: &key, UploadId: &uploadID, MaxParts: aws.Int32(1)})
		if httpStatus(err) == http.StatusNotFound {
			return
		}
		if err == nil {
			_, err = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: &uploadID})
		}
	}
	s.log.Warn("could not make sure a failed multipart upload is aborted; a bucket lifecycle rule (AbortIncompleteMultipartUpload) has to remove it",
		"key", key, "upload_id", uploadID, "err", err)
}

func (s *S3) putError(full, ifMatch string, err error) error {
	status := httpStatus(err)
	switch {
	case status == http.StatusPreconditionFailed && ifMatch == "":
		return fmt.Errorf("%w: %s", ErrExists, full)
	case status == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %s is no longer etag %s", ErrPreconditionFailed, full, ifMatch)
	case ifMatch != "" && isNotFound(err):
		return fmt.Errorf("%w: %w: %s", ErrPreconditionFailed, ErrNotFound, full)
	default:
		return fmt.Errorf("storage: uploading %s: %w", full, err)
	}
}

func (s *S3) presignGet(ctx context.Context, full string) (string, error) {
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		return "", fmt.Errorf("storage: presigning %s: %w", full, err)
	}
	return req.URL, nil
}

// PresignInline returns a presigned GET URL of the object under key whose
// answer asks the browser to show it (Content-Disposition: inline, with
// fileName; letters, digits, '.', '-' and '_', others replaced by '_'),
// whatever the object was stored with: a reader's download link opens the
// PDF in the browser's viewer.
func (s *S3) PresignInline(ctx context.Context, key, fileName string) (string, error) {
	full, err := fullKey(s.prefix, key)
	if err != nil {
		return "", err
	}
	disposition := `inline; filename="` + safeFileName(fileName) + `"`
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full, ResponseContentDisposition: &disposition})
	if err != nil {
		return "", fmt.Errorf("storage: presigning %s: %w", full, err)
	}
	return req.URL, nil
}

// ListIncompleteUploads returns the keys of multipart uploads in progress
// under the backend's prefix (for tests and operators).
func (s *S3) ListIncompleteUploads(ctx context.Context) ([]string, error) {
	var keys []string
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, u := range page.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
	}
	return keys, nil
}

type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nf *s3types.NotFound
	var nk *s3types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nk) {
		return true
	}
	switch apiCode(err) {
	case "NotFound", "NoSuchKey":
		return true
	}
	return false
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }

func quote(etag string) string {
	if strings.HasPrefix(etag, `"`) || etag == "*" {
		return etag
	}
	return `"` + etag + `"`
}

func lowerKeys(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}
