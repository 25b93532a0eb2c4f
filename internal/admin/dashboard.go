package admin

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
)

// DashboardConfig mounts the asynqmon web UI.
type DashboardConfig struct {
	Redis    asynq.RedisConnOpt
	User     string // basic auth when User and Password are set
	Password string
	ReadOnly bool
}

// dashboardPath is where the UI is served.
const dashboardPath = "/monitoring"

// maxShownPayload bounds what the UI shows of a payload: an inline manual can
// be 2 MiB of HTML, which would make the task list unusable.
const maxShownPayload = 4 << 10

func newDashboard(cfg DashboardConfig) http.Handler {
	var h http.Handler = asynqmon.New(asynqmon.Options{
		RootPath:         dashboardPath,
		RedisConnOpt:     cfg.Redis,
		ReadOnly:         cfg.ReadOnly,
		PayloadFormatter: asynqmon.PayloadFormatterFunc(func(_ string, b []byte) string { return readableJSON(b) }),
		ResultFormatter:  asynqmon.ResultFormatterFunc(func(_ string, b []byte) string { return readableJSON(b) }),
	})
	if cfg.User != "" {
		h = basicAuth(h, cfg.User, cfg.Password)
	}
	// Browsers replay basic-auth credentials on requests other sites make
	// them send: state-changing requests (retry, delete, pause) from another
	// origin are refused with 403 (Sec-Fetch-Site, or Origin vs Host).
	return http.NewCrossOriginProtection().Handler(h)
}

// readableJSON indents JSON and shortens long string values (inline HTML),
// so payloads and results read well in the dashboard.
func readableJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		if len(b) > maxShownPayload {
			return fmt.Sprintf("%s… (%d bytes, not JSON)", b[:maxShownPayload], len(b))
		}
		return string(b)
	}
	v = shorten(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return buf.String()
}

func shorten(v any) any {
	switch t := v.(type) {
	case string:
		t = redact.Text(t) // no password or query value of any URL
		if len(t) > 200 {
			return fmt.Sprintf("%s… (%d bytes)", t[:200], len(t))
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = shorten(e)
		}
	case []any:
		for i, e := range t {
			t[i] = shorten(e)
		}
	}
	return v
}

func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="pdfexport dashboard"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
