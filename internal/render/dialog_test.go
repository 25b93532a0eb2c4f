package render

import (
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestRender_DialogsAreDismissed: alert, confirm and prompt would block the
// page until the render deadline; they are dismissed and the page goes on
// (confirm answers false, prompt null).
func TestRender_DialogsAreDismissed(t *testing.T) {
	// Serial, on a browser of its own: its bound on the render is real time
	// and below Config.Timeout's default.
	r := newRenderer(t, Config{Timeout: 10 * time.Second})
	html := `<!doctype html><body><p id=out>START</p><script>
alert("hello");
const c = confirm("sure?");
const p = prompt("name?", "default");
document.getElementById("out").textContent = "AFTER-DIALOGS confirm=" + c + " prompt=" + p;
window.__PDF_READY__ = true;
</script></body>`
	start := time.Now()
	res := mustRender(t, r, Source{HTML: html}, settings(spec.Options{WaitFor: "window.__PDF_READY__ === true"}))
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("render took %s: the dialogs blocked it", took)
	}
	text := pdfText(t, res.pdf)
	if !strings.Contains(text, "AFTER-DIALOGS confirm=false prompt=null") {
		t.Fatalf("page script did not continue past the dialogs:\n%s", text)
	}
}
