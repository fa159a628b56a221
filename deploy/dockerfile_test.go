package deploy

import (
	"encoding/json"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
)

const dockerfile = "../Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Line  int
	Cmd   string // upper case: FROM, RUN, ...
	Args  string
	Stage int // index of the FROM it belongs to
}

// parseDockerfile reads just enough of the Dockerfile syntax for the checks
// below: comments, "\" continuations and stages. Heredocs are not handled.
func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start, stage := 0, -1
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || trimmed == "" && cur.Len() == 0 {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, more := strings.CutSuffix(trimmed, "\\"); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{Line: start, Cmd: cmd, Args: strings.Join(strings.Fields(args), " "), Stage: stage})
	}
	if stage < 0 {
		t.Fatalf("%s: no FROM", dockerfile)
	}
	return out
}

// fromImage is the image of a FROM instruction, without --platform and AS.
func fromImage(args string) string {
	for _, f := range strings.Fields(args) {
		if !strings.HasPrefix(f, "--") {
			return f
		}
	}
	return ""
}

// exec parses the JSON (exec) form of ENTRYPOINT and CMD. The shell form
// would need a shell, which the final image does not have.
func exec(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.Args), &v); err != nil {
		t.Errorf("%s:%d: %s %s: want the JSON form: %v", dockerfile, in.Line, in.Cmd, in.Args, err)
	}
	return v
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	last := ins[len(ins)-1].Stage
	var final, build []instruction
	for _, in := range ins {
		if in.Stage == last {
			final = append(final, in)
		} else {
			build = append(build, in)
		}
	}

	image := fromImage(final[0].Args)
	if image != "scratch" && !strings.HasPrefix(image, "gcr.io/distroless/") {
		t.Errorf("%s:%d: final stage FROM %s: want distroless or scratch", dockerfile, final[0].Line, image)
	}

	// Non-root by the image's tag or by a USER that is not root.
	nonroot := strings.HasSuffix(image, ":nonroot")
	for _, in := range final {
		if in.Cmd == "USER" {
			user, _, _ := strings.Cut(in.Args, ":")
			nonroot = user != "root" && user != "0"
		}
	}
	if !nonroot {
		t.Errorf("%s: final stage runs as root: want USER 65532 or a :nonroot image", dockerfile)
	}

	// The port the Kubernetes config listens on is the one the image documents.
	s := loadScheduler(t)
	port := strconv.Itoa(s.listenPort(t))
	exposed := false
	for _, in := range final {
		if in.Cmd == "EXPOSE" {
			for _, p := range strings.Fields(in.Args) {
				exposed = exposed || strings.TrimSuffix(p, "/tcp") == port
			}
		}
	}
	if !exposed {
		t.Errorf("%s: final stage does not EXPOSE %s, the port of api.listen in ConfigMap %q", dockerfile, port, schedulerConfigMap)
	}

	var entrypoint, cmd []string
	for _, in := range ins {
		switch {
		case in.Cmd == "HEALTHCHECK":
			// Kubernetes ignores it, and the image has no tool to run it.
			t.Errorf("%s:%d: HEALTHCHECK: Kubernetes probes /healthz and /readyz instead", dockerfile, in.Line)
		case in.Cmd == "ENTRYPOINT" && in.Stage == last:
			entrypoint = exec(t, in)
		case in.Cmd == "CMD" && in.Stage == last:
			cmd = exec(t, in)
		}
	}
	if len(entrypoint) != 1 || entrypoint[0] != "/scheduler" {
		t.Errorf("%s: ENTRYPOINT %q, want [\"/scheduler\"]; the Deployment passes only args", dockerfile, entrypoint)
	}
	if len(cmd) > 0 {
		flags := parseArgs(t, cmd)
		if got, want := path.Dir(flags["config"]), path.Dir(s.args["config"]); got != want {
			t.Errorf("%s: CMD reads its config from %s, the Deployment mounts it at %s", dockerfile, got, want)
		}
	}

	// A static binary, because distroless/static and scratch have no libc.
	var goBuild *instruction
	for i, in := range build {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			goBuild = &build[i]
		}
	}
	if goBuild == nil {
		t.Fatalf("%s: no RUN ... go build in a build stage", dockerfile)
	}
	cgoOff := strings.Contains(goBuild.Args, "CGO_ENABLED=0")
	for _, in := range build {
		if in.Cmd == "ENV" && in.Stage == goBuild.Stage && strings.Contains(in.Args, "CGO_ENABLED=0") {
			cgoOff = true
		}
	}
	if !cgoOff {
		t.Errorf("%s:%d: go build without CGO_ENABLED=0: the binary would need libc", dockerfile, goBuild.Line)
	}
	for _, want := range []string{"-trimpath", "-X main.version=", "./cmd/scheduler"} {
		if !strings.Contains(goBuild.Args, want) {
			t.Errorf("%s:%d: go build without %s", dockerfile, goBuild.Line, want)
		}
	}
}
