package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
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

// execForm parses the JSON (exec) form of ENTRYPOINT and CMD. The shell form
// would need a shell, which the final image does not have.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.Args), &v); err != nil {
		t.Errorf("%s:%d: %s %s: want the JSON form: %v", dockerfile, in.Line, in.Cmd, in.Args, err)
	}
	return v
}

// stage is one FROM and the instructions under it.
type stage struct {
	Name  string // after AS, if any
	Image string
	Ins   []instruction
}

func stages(ins []instruction) []stage {
	var out []stage
	for _, in := range ins {
		if in.Cmd == "FROM" {
			st := stage{Image: fromImage(in.Args)}
			f := strings.Fields(in.Args)
			if len(f) >= 2 && strings.EqualFold(f[len(f)-2], "AS") {
				st.Name = f[len(f)-1]
			}
			out = append(out, st)
		}
		out[len(out)-1].Ins = append(out[len(out)-1].Ins, in)
	}
	return out
}

// checkRuntimeStage: a stage that ships the binary runs it as a non-root
// user, exposes the port of api.listen and takes the Deployment's args.
func checkRuntimeStage(t *testing.T, s scheduler, st stage) {
	t.Helper()
	where := fmt.Sprintf("%s: stage FROM %s", dockerfile, st.Image)
	// Non-root by the image's tag or by a USER that is not root, written
	// as a number so runAsNonRoot can check it.
	nonroot := strings.HasSuffix(st.Image, ":nonroot")
	for _, in := range st.Ins {
		if in.Cmd == "USER" {
			user, _, _ := strings.Cut(in.Args, ":")
			_, numeric := strconv.Atoi(user)
			nonroot = user != "root" && user != "0" && numeric == nil
		}
	}
	if !nonroot {
		t.Errorf("%s: runs as root or a named user: want USER 65532 or a :nonroot image", where)
	}

	// The port the Kubernetes config listens on is the one the image documents.
	port := strconv.Itoa(s.listenPort(t))
	exposed := false
	for _, in := range st.Ins {
		if in.Cmd == "EXPOSE" {
			for _, p := range strings.Fields(in.Args) {
				exposed = exposed || strings.TrimSuffix(p, "/tcp") == port
			}
		}
	}
	if !exposed {
		t.Errorf("%s: does not EXPOSE %s, the port of api.listen in ConfigMap %q", where, port, s.names.configMap)
	}

	var entrypoint, cmd []string
	copied := false
	for _, in := range st.Ins {
		switch in.Cmd {
		case "ENTRYPOINT":
			entrypoint = execForm(t, in)
		case "CMD":
			cmd = execForm(t, in)
		case "COPY":
			copied = copied || strings.HasPrefix(in.Args, "--from=build ") && strings.HasSuffix(in.Args, " /scheduler")
		}
	}
	if !copied {
		t.Errorf("%s: no COPY --from=build ... /scheduler", where)
	}
	if len(entrypoint) != 1 || entrypoint[0] != "/scheduler" {
		t.Errorf("%s: ENTRYPOINT %q, want [\"/scheduler\"]; the Deployment passes only args", where, entrypoint)
	}
	if len(cmd) > 0 {
		flags := parseArgs(t, cmd)
		if got, want := path.Dir(flags["config"]), path.Dir(s.args["config"]); got != want {
			t.Errorf("%s: CMD reads its config from %s, the Deployment mounts it at %s", where, got, want)
		}
	}
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	sts := stages(ins)
	final := sts[len(sts)-1]
	if final.Image != "scratch" && !strings.HasPrefix(final.Image, "gcr.io/distroless/") {
		t.Errorf("%s: final stage FROM %s: want distroless or scratch", dockerfile, final.Image)
	}
	s := kustomizeScheduler(t)
	checkRuntimeStage(t, s, final)

	for _, in := range ins {
		if in.Cmd == "HEALTHCHECK" {
			// Kubernetes ignores it, and the image has no tool to run it.
			t.Errorf("%s:%d: HEALTHCHECK: Kubernetes probes /healthz and /readyz instead", dockerfile, in.Line)
		}
	}

	// A static binary, because distroless/static and scratch have no libc.
	var goBuild *instruction
	var build stage
	for _, st := range sts[:len(sts)-1] {
		for i, in := range st.Ins {
			if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
				goBuild, build = &st.Ins[i], st
			}
		}
	}
	if goBuild == nil {
		t.Fatalf("%s: no RUN ... go build in a build stage", dockerfile)
	}
	if build.Name != "build" {
		t.Errorf("%s:%d: go build runs in stage %q; the runtime stages copy from \"build\"", dockerfile, goBuild.Line, build.Name)
	}
	cgoOff := strings.Contains(goBuild.Args, "CGO_ENABLED=0")
	for _, in := range build.Ins {
		if in.Cmd == "ENV" && strings.Contains(in.Args, "CGO_ENABLED=0") {
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

// execTools are what exec jobs commonly shell out to; the README promises
// them in the exec image.
var execTools = []string{"ca-certificates", "tzdata", "bash", "curl", "coreutils", "procps"}

// TestDockerfileExecStage: the "exec" target is the same binary on a
// Debian that matches distroless' (so tzdata and CA roots agree), with a
// shell and the tools, running as 65532 like the default.
func TestDockerfileExecStage(t *testing.T) {
	sts := stages(parseDockerfile(t))
	var ex *stage
	for i, st := range sts {
		if st.Name == "exec" {
			ex = &sts[i]
		}
	}
	if ex == nil {
		t.Fatalf("%s: no stage named exec (docker build --target exec)", dockerfile)
	}
	if ex == &sts[len(sts)-1] {
		t.Errorf("%s: the exec stage is last, so a plain docker build would pick it over distroless", dockerfile)
	}
	if !strings.HasPrefix(ex.Image, "debian:bookworm") {
		t.Errorf("%s: exec stage FROM %s: want debian:bookworm(-slim), the Debian of distroless static-debian12", dockerfile, ex.Image)
	}
	var installed []string
	for _, in := range ex.Ins {
		if in.Cmd != "RUN" {
			continue
		}
		for cmd := range strings.SplitSeq(in.Args, "&&") {
			f := strings.Fields(cmd)
			i := slices.Index(f, "install")
			if i < 0 || !slices.Contains(f[:i], "apt-get") {
				continue
			}
			if !slices.Contains(f, "--no-install-recommends") {
				t.Errorf("%s:%d: apt-get install without --no-install-recommends", dockerfile, in.Line)
			}
			for _, a := range f[i+1:] {
				if !strings.HasPrefix(a, "-") {
					installed = append(installed, a)
				}
			}
		}
	}
	for _, tool := range execTools {
		if !slices.Contains(installed, tool) {
			t.Errorf("%s: exec stage does not apt-get install %s (installs %q)", dockerfile, tool, installed)
		}
	}
	checkRuntimeStage(t, kustomizeScheduler(t), *ex)
}
