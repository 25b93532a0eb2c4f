package callback

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// verifyJS verifies a delivery with the npm standardwebhooks package (the
// Standard Webhooks JavaScript reference library), once as received and
// once with the body changed by one byte: it prints "ok refused".
const verifyJS = `
const { Webhook } = require(process.env.SW_MODULE);
const fs = require("fs");
const [secret, headersFile, bodyFile] = process.argv.slice(1);
const headers = JSON.parse(fs.readFileSync(headersFile, "utf8"));
const body = fs.readFileSync(bodyFile);
const wh = new Webhook(secret);
const final = wh.verify(body, headers);
if (final.task_id !== "t-1") throw new Error("body " + JSON.stringify(final));
const tampered = Buffer.from(body);
tampered[tampered.length >> 1] ^= 1;
let refused = "accepted";
try { wh.verify(tampered, headers); } catch (e) { refused = "refused"; }
console.log("ok " + refused);
`

// TestDeliver_VerifiesWithTheNodeLibrary: an independent check in another
// language. A real delivery, signed with two rotated keys, verifies with
// npm's standardwebhooks (pinned in api/client-check) under each key, and
// its tampered copy does not.
func TestDeliver_VerifiesWithTheNodeLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Node tools")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "scripts", "install-node-tools.sh")).CombinedOutput(); err != nil {
		t.Fatalf("scripts/install-node-tools.sh (run by make setup): %v\n%s", err, out)
	}
	r := newReceiver(t)
	d := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(r.host())}, oldSecret+","+newSecret)
	defer d.Close()
	if err := d.Post(context.Background(), outcome(t, r.srv.URL+"/h")); err != nil {
		t.Fatal(err)
	}
	q := r.got()[0]
	headers := map[string]string{}
	for name := range q.header {
		headers[name] = q.header.Get(name)
	}
	dir := t.TempDir()
	raw, _ := json.Marshal(headers)
	if err := os.WriteFile(filepath.Join(dir, "headers.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "body"), q.body, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{oldSecret, newSecret} {
		cmd := exec.Command("node", "-e", verifyJS, secret, filepath.Join(dir, "headers.json"), filepath.Join(dir, "body"))
		cmd.Env = append(os.Environ(), "SW_MODULE="+filepath.Join(root, "var", "node-tools", "node_modules", "standardwebhooks"))
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok refused" {
			t.Errorf("node standardwebhooks: %v\n%s", err, out)
		}
	}
}
