package deployments

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// CI cannot pull base images, so these read deployments/Dockerfile as text:
// what `docker build` would do with it is checked against go.mod and the
// Makefile instead.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Cmd  string // FROM, COPY, RUN, …
	Args string
}

func parseDockerfile(s string) []instruction {
	var ins []instruction
	var cur strings.Builder
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		ins = append(ins, instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return ins
}

// goCommand matches a shell command that runs go (go mod download, go build).
var goCommand = regexp.MustCompile(`(^|[;&|(]\s*|\s)go\s+\w`)

// copiedBeforeGo returns the build context paths that the stage of the
// first RUN of a go command copies before it, and that RUN.
func copiedBeforeGo(ins []instruction) (copied []string, firstGo string) {
	for _, in := range ins {
		switch in.Cmd {
		case "FROM":
			copied = nil
		case "COPY", "ADD":
			fields := strings.Fields(in.Args)
			var srcs []string
			from := false
			for _, f := range fields {
				if strings.HasPrefix(f, "--") {
					from = from || strings.HasPrefix(f, "--from=")
					continue
				}
				srcs = append(srcs, f)
			}
			if from || len(srcs) < 2 {
				continue
			}
			copied = append(copied, srcs[:len(srcs)-1]...)
		case "RUN":
			if goCommand.MatchString(in.Args) {
				return copied, in.Args
			}
		}
	}
	return copied, ""
}

// covers tells whether copying src brings the repository path p along.
func covers(src, p string) bool {
	src, p = path.Clean(src), path.Clean(p)
	return src == "." || src == p || strings.HasPrefix(p, src+"/")
}

// missingReplacements returns the local `replace` targets of go.mod that the
// Dockerfile does not copy before its first go command.
func missingReplacements(dockerfile string, localReplaces []string) error {
	copied, firstGo := copiedBeforeGo(parseDockerfile(dockerfile))
	if firstGo == "" {
		return fmt.Errorf("the build stage runs no go command")
	}
	var missing []string
	for _, r := range localReplaces {
		if !slices.ContainsFunc(copied, func(src string) bool { return covers(src, r) }) {
			missing = append(missing, r)
		}
	}
	if missing != nil {
		return fmt.Errorf("go.mod replaces modules with %v, which the Dockerfile copies only after its first go command (%q): copy them before it", missing, firstGo)
	}
	return nil
}

func localReplaces(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Replace []struct{ New struct{ Path string } }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	var local []string
	for _, r := range mod.Replace {
		if strings.HasPrefix(r.New.Path, "./") || strings.HasPrefix(r.New.Path, "../") {
			local = append(local, r.New.Path)
		}
	}
	return local
}

// TestDockerfile_CopiesLocalReplacementsBeforeGo: `go mod download` in the
// image build resolves go.mod's replace of asynq with ./third_party/asynq,
// so that folder (any local replace target) must be in the image before the
// first go command. The Dockerfile of v0.1.0's predecessor copied it later,
// and `docker build` failed at `RUN go mod download`.
func TestDockerfile_CopiesLocalReplacementsBeforeGo(t *testing.T) {
	replaces := []string{"./third_party/asynq"}
	cases := []struct {
		name, dockerfile, wantErr string
	}{
		{"copied after go mod download", "FROM golang AS build\nCOPY go.mod go.sum ./\nRUN go mod download\nCOPY . .\nRUN go build ./cmd/worker\n", "./third_party/asynq"},
		{"copied before", "FROM golang AS build\nCOPY go.mod go.sum ./\nCOPY third_party ./third_party\nRUN go mod download\n", ""},
		{"whole context first", "FROM golang AS build\nCOPY . .\nRUN go build ./...\n", ""},
		{"only a sibling copied", "FROM golang AS build\nCOPY go.mod go.sum ./\nCOPY third_party/other ./third_party/other\nRUN go mod download\n", "./third_party/asynq"},
		{"from another stage does not count", "FROM x AS a\nFROM golang AS build\nCOPY --from=a /third_party ./third_party\nRUN go mod download\n", "./third_party/asynq"},
		{"continued RUN", "FROM golang AS build\nCOPY go.mod ./\nRUN apt-get update \\\n && go mod download\nCOPY third_party ./third_party\n", "./third_party/asynq"},
		{"no go command", "FROM golang AS build\nCOPY . .\n", "runs no go command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := missingReplacements(c.dockerfile, replaces)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, c.wantErr)
			}
		})
	}
	t.Run("deployments/Dockerfile", func(t *testing.T) {
		raw, err := os.ReadFile("Dockerfile")
		if err != nil {
			t.Fatal(err)
		}
		local := localReplaces(t)
		if len(local) == 0 {
			t.Log("go.mod has no local replace")
		}
		if err := missingReplacements(string(raw), local); err != nil {
			t.Fatal(err)
		}
	})
}

var (
	dockerBuild = regexp.MustCompile(`go build -trimpath -ldflags "\$LDFLAGS" -o /out/(\S+) (\./cmd/\S+)`)
	dockerArgRE = regexp.MustCompile(`\$\{?(\w+)\}?`)
)

// TestDockerfile_MatchesMakefile: the image builds the binaries `make build`
// builds, from the same packages, static, -trimpath, stamping the same
// buildinfo variables; it ships every one of them; `make image` passes each
// build argument the Dockerfile reads; and the image carries the OCI labels
// version, revision, source and licence (the licence of LICENSE).
func TestDockerfile_MatchesMakefile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(string(raw))
	var buildRun, shipped string
	args := map[string]bool{}
	labels := map[string]string{}
	for _, in := range ins {
		switch in.Cmd {
		case "RUN":
			if strings.Contains(in.Args, "go build") {
				buildRun = in.Args
			}
		case "COPY":
			if strings.HasPrefix(in.Args, "--from=build ") {
				shipped = in.Args
			}
		case "ARG":
			name, _, _ := strings.Cut(in.Args, "=")
			args[name] = true
		case "LABEL":
			for _, m := range regexp.MustCompile(`(\S+)="([^"]*)"`).FindAllStringSubmatch(in.Args, -1) {
				labels[m[1]] = m[2]
			}
		}
	}
	if buildRun == "" {
		t.Fatal("Dockerfile: no RUN with go build")
	}
	got := map[string]string{}
	for _, m := range dockerBuild.FindAllStringSubmatch(buildRun, -1) {
		got[m[1]] = m[2]
		if !strings.Contains(shipped, "/out/"+m[1]+" ") {
			t.Errorf("Dockerfile builds /out/%s but its COPY --from=build (%q) does not ship it", m[1], shipped)
		}
	}
	if want := makefileBuilds(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Dockerfile builds %v (go build -trimpath -ldflags \"$LDFLAGS\" -o /out/NAME ./cmd/NAME), the Makefile %v", got, want)
	}
	if !strings.Contains(buildRun, "CGO_ENABLED=0") {
		t.Errorf("Dockerfile's build is not static: no CGO_ENABLED=0 in %q", buildRun)
	}
	if v, want := stampedVars(buildRun), makefileStamps(t); !slices.Equal(v, want) {
		t.Errorf("Dockerfile stamps buildinfo %v, the Makefile %v", v, want)
	}

	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`(?s)\nimage:.*?\n\n`).FindString(string(mk))
	if image == "" {
		t.Fatal("Makefile: no image target")
	}
	passed := map[string]bool{}
	for _, m := range regexp.MustCompile(`--build-arg (\w+)=`).FindAllStringSubmatch(image, -1) {
		passed[m[1]] = true
	}
	if !strings.Contains(image, "-f deployments/Dockerfile") {
		t.Errorf("make image does not build deployments/Dockerfile:\n%s", image)
	}
	var used []string
	for _, m := range dockerArgRE.FindAllStringSubmatch(string(raw), -1) {
		if args[m[1]] {
			used = append(used, m[1])
		}
	}
	sort.Strings(used)
	used = slices.Compact(used)
	for _, a := range used {
		if !passed[a] {
			t.Errorf("the Dockerfile reads build argument %s, which make image does not pass", a)
		}
	}
	for a := range passed {
		if !args[a] {
			t.Errorf("make image passes --build-arg %s, which the Dockerfile does not declare", a)
		}
	}
	for _, l := range []string{"version", "revision", "source", "licenses"} {
		if _, ok := labels["org.opencontainers.image."+l]; !ok {
			t.Errorf("Dockerfile lacks the label org.opencontainers.image.%s (labels: %v)", l, labels)
		}
	}
	if l := labels["org.opencontainers.image.licenses"]; l != "Apache-2.0" {
		t.Errorf("label org.opencontainers.image.licenses is %q, LICENSE is Apache-2.0", l)
	}
}
