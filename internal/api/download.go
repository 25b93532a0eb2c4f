package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Artifacts is the part of artifact storage downloads need.
type Artifacts interface {
	Stat(ctx context.Context, key string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// writeIdle is how long a download may wait for the client to take more
// bytes; each write extends the deadline, so a large PDF on a slow link
// streams to the end and a stalled client is cut off.
const writeIdle = 30 * time.Second

// download answers GET /v1/exports/{id}/pdf. For storage whose objects have
// HTTP URLs (S3: a presigned URL, fresh at each Stat) it redirects there
// unless ?redirect=false; otherwise it streams the PDF with ETag,
// Last-Modified, Range and conditional requests (file storage; an S3 stream
// has ETag and If-None-Match but no Range).
func (a *api) download(w http.ResponseWriter, r *http.Request) {
	if a.store == nil {
		writeJSON(w, http.StatusNotImplemented, apiError{Error: "this API has no artifact storage configured (STORAGE_URL)"})
		return
	}
	id := r.PathValue("id")
	st, key, err := a.client.Artifact(r.Context(), id)
	if a.failed(w, r, err) || a.foreign(w, r, st) {
		return
	}
	if st.State != exportclient.StateCompleted {
		writeJSON(w, http.StatusConflict, statusResponse{State: st.State, Error: fmt.Sprintf(
			"the export is %s; its PDF can be downloaded once it is completed (GET /v1/exports/%s?wait=30s)", st.State, id)})
		return
	}
	obj, err := a.store.Stat(r.Context(), key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Error: "the export completed but its PDF is no longer in storage (deleted or expired); export it again"})
		return
	case err != nil:
		a.log.Error("download: storage", "task_id", id, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "storage unavailable, retry later"})
		return
	}
	a.serveObject(w, r, key, obj, servedAs{disposition: "attachment", fileName: fileName(obj),
		cacheControl: "private, max-age=0, must-revalidate", redirect: r.URL.Query().Get("redirect") != "false"})
}

// inlinePresigner is storage whose presigned URLs can ask for the object to
// be shown in the browser (storage.S3).
type inlinePresigner interface {
	PresignInline(ctx context.Context, key, fileName string) (string, error)
}

// servedAs is how serveObject answers with an artifact.
type servedAs struct {
	disposition  string // Content-Disposition: attachment or inline
	fileName     string
	cacheControl string
	redirect     bool // to the object's own HTTP URL when it has one (S3)
}

// serveObject answers with the artifact obj stored under key: a redirect
// to its presigned URL (S3, when as.redirect), else the PDF streamed with
// ETag, Last-Modified, Range and conditional requests (file storage; an S3
// stream has ETag and If-None-Match but no Range).
func (a *api) serveObject(w http.ResponseWriter, r *http.Request, key string, obj storage.Object, as servedAs) {
	if redirectable(obj.URL) && as.redirect {
		target := obj.URL
		if p, ok := a.store.(inlinePresigner); ok && as.disposition == "inline" {
			u, err := p.PresignInline(r.Context(), key, as.fileName)
			if err != nil {
				a.log.ErrorContext(r.Context(), "download: presigning", "key", key, "err", err)
				writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "storage unavailable, retry later"})
				return
			}
			target = u
		}
		w.Header().Set("Cache-Control", "no-store") // the URL expires
		http.Redirect(w, r, target, http.StatusFound)
		return
	}
	body, err := a.store.Open(r.Context(), key)
	if err != nil {
		a.log.ErrorContext(r.Context(), "download: opening the artifact", "key", key, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "storage unavailable, retry later"})
		return
	}
	defer body.Close()
	h := w.Header()
	mediaType, _ := spec.ArtifactType(key)
	h.Set("Content-Type", mediaType)
	h.Set("Content-Disposition", mime.FormatMediaType(as.disposition, map[string]string{"filename": as.fileName}))
	h.Set("ETag", `"`+obj.ETag+`"`)
	h.Set("Cache-Control", as.cacheControl)
	h.Set("X-Content-Type-Options", "nosniff")
	out := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
	if f, ok := body.(*os.File); ok {
		var modified time.Time
		if fi, err := f.Stat(); err == nil {
			modified = fi.ModTime()
		}
		http.ServeContent(out, r, "", modified, f) // Range, If-None-Match, If-Modified-Since
		return
	}
	if etagMatches(r.Header.Get("If-None-Match"), obj.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Accept-Ranges", "none")
	h.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(out, body); err != nil && r.Context().Err() == nil {
		a.log.WarnContext(r.Context(), "download interrupted", "key", key, "err", err)
	}
}

// fileName is the download name: manual-version.pdf (or the image's
// extension) from the artifact's metadata (identifiers are [A-Za-z0-9._-],
// safe in a header), else the key's last element.
func fileName(obj storage.Object) string {
	if m, v := obj.Metadata["manual-id"], obj.Metadata["version"]; m != "" && v != "" {
		_, ext := spec.ArtifactType(obj.Key)
		return m + "-" + v + ext
	}
	return obj.Key[strings.LastIndex(obj.Key, "/")+1:]
}

func redirectable(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// etagMatches implements If-None-Match for one strong ETag.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == `"`+etag+`"` {
			return true
		}
	}
	return false
}

// deadlineWriter extends the connection's write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(writeIdle))
	return d.ResponseWriter.Write(b)
}

// sendChunk is how much of a file one write deadline covers when the
// connection sends it with sendfile(2): at writeIdle per chunk, a client
// slower than 128 KiB/s is cut off, as one that stalls on Write is.
const sendChunk = 4 << 20

// ReadFrom lets http.ServeContent hand the file to the connection's
// ReadFrom (sendfile(2) for a TCP connection: no copy through user space,
// what http.FileServer does), a chunk per write deadline. net's sendfile
// takes an *os.File, or one *io.LimitedReader around it, which is what
// ServeContent's io.CopyN passes.
func (d *deadlineWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := d.ResponseWriter.(io.ReaderFrom)
	lr, limited := src.(*io.LimitedReader)
	if !ok {
		return io.Copy(struct{ io.Writer }{d}, src)
	}
	if !limited {
		lr = &io.LimitedReader{R: src, N: 1<<63 - 1}
	}
	var total int64
	for lr.N > 0 {
		_ = d.rc.SetWriteDeadline(time.Now().Add(writeIdle))
		chunk := &io.LimitedReader{R: lr.R, N: min(lr.N, sendChunk)}
		want := chunk.N
		n, err := rf.ReadFrom(chunk)
		total += n
		lr.N -= n
		if err != nil || n < want {
			return total, err
		}
	}
	return total, nil
}
