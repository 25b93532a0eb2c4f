package config

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/storage"
)

func TestLoad_DefaultsAreValid(t *testing.T) {
	c, err := Load(nil)
	if err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	if c.StorageURL != "file://./var/artifacts" || c.RenderConcurrency != 2 || !c.LockFailOpen || c.LockTTL != 30*time.Second {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if c.QueueWeights["critical"] != 6 || c.QueueWeights["batch"] != 1 {
		t.Fatalf("queues = %v", c.QueueWeights)
	}
}

func TestLoad_ListsEveryBadVariable(t *testing.T) {
	environ := []string{
		"REDIS_URL=http://x",
		"RENDER_CONCURRENCY=zero",
		"LOCK_TTL=soon",
		"LOCK_FAIL_OPEN=maybe",
		"STORAGE_URL=ftp://x",
		"ALLOWED_HOSTS=https://docs.example.com/",
		"QUEUES=critical=0",
		"LOG_FORMAT=xml",
		"WORKER_CONCURRENCY=0",
		"REDIS_SENTINEL_ADDRS=a:1",
	}
	_, err := Load(environ)
	var cfgErr *Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want *Error", err)
	}
	want := []string{"REDIS_URL", "RENDER_CONCURRENCY", "LOCK_TTL", "LOCK_FAIL_OPEN", "STORAGE_URL",
		"ALLOWED_HOSTS", "QUEUES", "LOG_FORMAT", "WORKER_CONCURRENCY", "REDIS_SENTINEL_MASTER"}
	for _, name := range want {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

func TestLoad_ParsesValues(t *testing.T) {
	c, err := Load([]string{
		"ALLOWED_HOSTS=docs.example.com, 127.0.0.1:8080,*.example.org",
		"QUEUES=critical=6,default=3",
		"STORAGE_URL=s3://bucket/prefix",
		"LOCK_TTL=300ms",
		"LOCK_FAIL_OPEN=false",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Allowed.AllowsHost("a.example.org", "443") || !c.Allowed.AllowsHost("127.0.0.1", "8080") || c.Allowed.AllowsHost("127.0.0.1", "80") {
		t.Fatalf("allowlist parsed wrong: %s", c.Allowed)
	}
	if len(c.QueueWeights) != 2 || c.LockTTL != 300*time.Millisecond || c.LockFailOpen {
		t.Fatalf("parsed %+v", c)
	}
}

func TestVariables_EveryVariableIsDocumented(t *testing.T) {
	vars := Variables()
	if len(vars) < 30 {
		t.Fatalf("only %d variables listed", len(vars))
	}
	for _, v := range vars {
		if v.Doc == "" {
			t.Errorf("%s has no help text", v.Name)
		}
	}
}

// TestLoad_OpenDashboardOnlyOnLoopback: the dashboard can retry, delete and
// pause tasks, so without DASHBOARD_USER it may listen on loopback only.
func TestLoad_OpenDashboardOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		env []string
		ok  bool
	}{
		{[]string{"DASHBOARD=true"}, true}, // default ADMIN_ADDR 127.0.0.1:9090
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=[::1]:9090"}, true},
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=localhost:9090"}, true},
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=0.0.0.0:9090"}, false},
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=:9090"}, false},
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=10.0.0.5:9090"}, false},
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=0.0.0.0:9090", "DASHBOARD_USER=ops"}, false}, // a user needs a password
		{[]string{"DASHBOARD=true", "ADMIN_ADDR=0.0.0.0:9090", "DASHBOARD_USER=ops", "DASHBOARD_PASSWORD=s3cret"}, true},
		{[]string{"ADMIN_ADDR=0.0.0.0:9090"}, true}, // no dashboard: health and metrics only
	} {
		_, err := Load(tc.env)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "DASHBOARD_")):
			t.Errorf("%v: err %v, want one naming the DASHBOARD_ variables", tc.env, err)
		}
	}
}

// TestLoad_ErrorsNeverShowSecrets: a malformed URL with a password is named,
// but its password is not in the message.
func TestLoad_ErrorsNeverShowSecrets(t *testing.T) {
	const pw = "PW-41c9d2"
	for _, env := range [][]string{
		{"REDIS_URL=redis://:" + pw + "@host:notaport/0"},
		{"REDIS_URL=redis://app:" + pw + "@host:6379/x"},
		{"LOCK_REDIS_URL=redis://:" + pw + "@host:6379/zz"},
		{"LOCK_REDIS_URL=http://:" + pw + "@host"},
		{"STORAGE_URL=s3://AKIA:" + pw + "@bucket/x y"},
	} {
		_, err := Load(env)
		if err == nil {
			t.Errorf("%v: no error", env)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%v: the error shows the password: %v", env, err)
		}
	}
}

// TestLoad_Delivery: the callback and download variables are checked and
// name themselves; only a worker needs CALLBACK_SECRET, and never shows it.
func TestLoad_Delivery(t *testing.T) {
	const secret = "SECRET-7f3a9c1e2b4d"
	key := "whsec_" + base64.StdEncoding.EncodeToString([]byte(secret+"-0123"))
	oldKey := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-previous-key-24bytes"))
	for _, tc := range []struct {
		env    []string
		bad    string // "" valid for every role
		worker string // "" valid for a worker too
	}{
		{[]string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com", "CALLBACK_SECRET=" + key}, "", ""},
		{[]string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com", "CALLBACK_SECRET=" + oldKey + " " + key}, "", ""},
		{[]string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com", "CALLBACK_SECRET=" + oldKey + "," + key}, "", ""},
		{[]string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com"}, "", "CALLBACK_SECRET"},
		{[]string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com:notaport"}, "CALLBACK_ALLOWED_HOSTS", ""},
		// Malformed entries stop a worker only (enqueuers do not read the
		// variable), and the message names the variable, never the value.
		{[]string{"CALLBACK_SECRET=" + secret}, "", "CALLBACK_SECRET"},
		{[]string{"CALLBACK_SECRET=" + key + " whsec_" + secret}, "", "CALLBACK_SECRET"},
		{[]string{"CALLBACK_SECRET=whsec_" + base64.StdEncoding.EncodeToString([]byte(secret[:8]))}, "", "CALLBACK_SECRET"},
		{[]string{"CALLBACK_TIMEOUT=0s"}, "CALLBACK_TIMEOUT", ""},
		{[]string{"CALLBACK_MAX_RETRY=-1"}, "CALLBACK_MAX_RETRY", ""},
		{[]string{"API_PUBLIC_URL=https://pdf.example.com"}, "", ""},
		{[]string{"API_PUBLIC_URL=pdf.example.com"}, "API_PUBLIC_URL", ""},
		{[]string{"API_PUBLIC_URL=https://u:" + secret + "@pdf.example.com"}, "API_PUBLIC_URL", ""},
	} {
		cfg, err := Load(tc.env)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.bad)
			}
		} else if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%v: the error shows the secret", tc.env)
			}
			continue
		}
		werr := cfg.CheckWorker()
		if werr != nil && (strings.Contains(werr.Error(), secret) || strings.Contains(werr.Error(), base64.StdEncoding.EncodeToString([]byte(secret[:8])))) {
			t.Errorf("%v: CheckWorker shows the secret: %v", tc.env, werr)
		}
		switch {
		case tc.worker == "" && werr != nil:
			t.Errorf("%v: CheckWorker: %v", tc.env, werr)
		case tc.worker != "" && (werr == nil || !strings.Contains(werr.Error(), tc.worker)):
			t.Errorf("%v: CheckWorker: %v, want one naming %s", tc.env, werr, tc.worker)
		}
	}
}

func TestStorage_IsTheStorageVariables(t *testing.T) {
	c, err := Load([]string{
		"STORAGE_URL=s3://pdfs/prefix", "S3_ENDPOINT=http://127.0.0.1:7070", "S3_REGION=eu-west-1",
		"S3_FORCE_PATH_STYLE=true", "S3_CREATE_BUCKET=true", "S3_PRESIGN_TTL=2h",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := storage.Config{URL: "s3://pdfs/prefix", S3Endpoint: "http://127.0.0.1:7070", S3Region: "eu-west-1",
		S3ForcePathStyle: true, PresignTTL: 2 * time.Hour}
	if got := c.Storage(); got != want {
		t.Fatalf("Storage() = %+v, want %+v (S3CreateBucket and Logger are the caller's)", got, want)
	}
}

// TestLoad_SpecialAddressWithoutPort: an ALLOWED_HOSTS or
// CALLBACK_ALLOWED_HOSTS entry naming a loopback, private or link-local
// address without a port would open every port on it (the worker's admin,
// API and Redis among them); Load refuses it naming the variable and the
// entry.
func TestLoad_SpecialAddressWithoutPort(t *testing.T) {
	for _, tc := range []struct {
		env        []string
		bad, entry string // "" valid
	}{
		{[]string{"ALLOWED_HOSTS=docs.example.com,127.0.0.1"}, "ALLOWED_HOSTS", "127.0.0.1"},
		{[]string{"ALLOWED_HOSTS=10.0.0.7"}, "ALLOWED_HOSTS", "10.0.0.7"},
		{[]string{"ALLOWED_HOSTS=[::1]"}, "ALLOWED_HOSTS", "[::1]"},
		{[]string{"ALLOWED_HOSTS=169.254.169.254"}, "ALLOWED_HOSTS", "169.254.169.254"},
		{[]string{"CALLBACK_ALLOWED_HOSTS=192.168.1.20"}, "CALLBACK_ALLOWED_HOSTS", "192.168.1.20"},
		{[]string{"ALLOWED_HOSTS=127.0.0.1:8080,10.0.0.7:443,docs.example.com,93.184.216.34"}, "", ""},
	} {
		_, err := Load(tc.env)
		if tc.bad == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.env, err)
			}
			continue
		}
		var cerr *Error
		if !errors.As(err, &cerr) || len(cerr.Vars) != 1 || cerr.Vars[0].Var != tc.bad ||
			!strings.Contains(cerr.Vars[0].Reason, `"`+tc.entry+`"`) || !strings.Contains(cerr.Vars[0].Reason, "explicit port") {
			t.Errorf("%v: err %v, want one error on %s naming %q and asking for a port", tc.env, err, tc.bad, tc.entry)
		}
	}
}
