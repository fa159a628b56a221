package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHelpListsEmittedValues reads the engine's source (internal/jobs) for
// the label values each metric of Set is given, resolving the constants of
// this package and of internal/runs, and checks that the metric's HELP
// names every one, and names no value that is never emitted. A reason
// passed in a variable counts through the constants: every Reason* of this
// package used anywhere is a skip reason, every runs.Outcome an outcome.
func TestHelpListsEmittedValues(t *testing.T) {
	consts := map[string]string{}
	var outcomes []string
	for _, dir := range []string{".", "../../runs"} {
		pkg := "metrics"
		if dir != "." {
			pkg = "runs"
		}
		eachFile(t, dir, false, func(f *ast.File) {
			for name, v := range stringConsts(f) {
				consts[pkg+"."+name] = v.value
				if pkg == "metrics" {
					consts[name] = v.value
				}
				if v.typ == "Outcome" {
					outcomes = append(outcomes, v.value)
				}
			}
		})
	}
	emitted := map[string][]string{"Runs": outcomes}
	add := func(field string, arg ast.Expr) {
		if v, ok := valueOf(arg, consts); ok && !slices.Contains(emitted[field], v) {
			emitted[field] = append(emitted[field], v)
		}
	}
	eachFile(t, "..", true, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "metrics" && strings.HasPrefix(n.Sel.Name, "Reason") {
					add("Skipped", n)
				}
			case *ast.CallExpr:
				labelArgs(n, add)
			}
			return true
		})
	})
	if len(emitted["Skipped"]) < 3 || len(emitted["ClaimFails"]) < 2 || len(emitted["Notifications"]) < 2 {
		t.Fatalf("found too few label values in the source to trust the scan: %v", emitted)
	}

	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for field, c := range map[string]prometheus.Collector{"Runs": s.Runs, "Skipped": s.Skipped, "ClaimFails": s.ClaimFails, "Notifications": s.Notifications} {
		name, help := describe(t, c)
		values := emitted[field]
		sort.Strings(values)
		for _, v := range values {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(help) {
				t.Errorf("%s is emitted with %q, which its HELP does not list: %q", name, v, help)
			}
		}
		listed := regexp.MustCompile(`\(([a-z_, ]+)\)\.?$`).FindStringSubmatch(help)
		if listed == nil {
			t.Errorf("%s: HELP %q lists no values in parentheses at its end", name, help)
			continue
		}
		for _, v := range strings.Split(listed[1], ", ") {
			if !slices.Contains(values, v) {
				t.Errorf("%s: HELP lists %q, which the code never emits (emitted: %v)", name, v, values)
			}
		}
	}
}

// labelArgs passes the label values of one call to add, by Set field: a
// WithLabelValues on a field, Set.NotStarted(job, outcome, reason) and the
// worker's finishUnstarted(ctx, q, outcome, reason, msg).
func labelArgs(call *ast.CallExpr, add func(field string, arg ast.Expr)) {
	var fn string
	var recv ast.Expr
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		fn, recv = f.Sel.Name, f.X
	case *ast.Ident:
		fn = f.Name
	}
	args := call.Args
	switch {
	case fn == "WithLabelValues":
		if sel, ok := recv.(*ast.SelectorExpr); ok {
			for _, a := range args {
				add(sel.Sel.Name, a)
			}
		}
	case fn == "NotStarted" && len(args) == 3 && isMetrics(recv):
		add("Runs", args[1])
		add("Skipped", args[2])
	case fn == "finishUnstarted" && len(args) == 5:
		add("Runs", args[2])
		add("Skipped", args[3])
	}
}

// isMetrics reports whether x is a Set: d.Metrics, e.metrics.
func isMetrics(x ast.Expr) bool {
	sel, ok := x.(*ast.SelectorExpr)
	return ok && strings.EqualFold(sel.Sel.Name, "metrics")
}

// valueOf resolves a string literal, a known constant, or a conversion of
// one (string(runs.Missed)).
func valueOf(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := consts[e.Name]
		return v, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			v, ok := consts[x.Name+"."+e.Sel.Name]
			return v, ok
		}
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			return valueOf(e.Args[0], consts)
		}
	}
	return "", false
}

type constant struct{ value, typ string }

// stringConsts are the string constants f declares, with their type name.
func stringConsts(f *ast.File) map[string]constant {
	out := map[string]constant{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			typ := ""
			if id, ok := vs.Type.(*ast.Ident); ok {
				typ = id.Name
			}
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[name.Name] = constant{v, typ}
					}
				}
			}
		}
	}
	return out
}

// eachFile parses the non-test Go files of dir (and, with deep, below it).
func eachFile(t *testing.T, dir string, deep bool, fn func(*ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !deep {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		fn(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// describe is a collector's metric name and HELP.
func describe(t *testing.T, c prometheus.Collector) (name, help string) {
	t.Helper()
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	d := (<-ch).String()
	m := regexp.MustCompile(`fqName: "([^"]*)", help: "((?:[^"\\]|\\.)*)"`).FindStringSubmatch(d)
	if m == nil {
		t.Fatalf("cannot read the name and HELP from %s", d)
	}
	return m[1], m[2]
}
