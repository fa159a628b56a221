package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// File is one file a configuration was read from.
type File struct {
	Path string `json:"path"`
	// Team is the team an included file declares; empty for the main file.
	Team string `json:"team,omitempty"`
	// Hash is a short fingerprint of the file's bytes.
	Hash string `json:"hash"`
}

// teamFile is what an included file may hold (docs/configuration.md,
// "Teams and tokens"): a team, its jobs, calendars and sinks, and the
// default sinks of its jobs. Nothing else: cluster settings stay in the
// main file, owned by whoever runs the cluster.
type teamFile struct {
	Team      string     `yaml:"team"`
	Notify    teamNotify `yaml:"notify"`
	Calendars []Calendar `yaml:"calendars"`
	Jobs      []Job      `yaml:"jobs"`
}

type teamNotify struct {
	Sinks   []Sink   `yaml:"sinks"`
	Default []string `yaml:"default"`
}

func fileHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// include reads the files c.Include names, relative to the main file, and
// merges each into c: its jobs, calendars and sinks are appended, and
// their positions recorded under the merged paths with the file they came
// from, so that validation names the right file and line.
func (c *Config) include(p *problems, mainFile string) {
	dir := filepath.Dir(mainFile)
	read := map[string]bool{}
	for i, pattern := range c.Include {
		path := "include[" + strconv.Itoa(i) + "]"
		full := pattern
		if !filepath.IsAbs(full) {
			full = filepath.Join(dir, full)
		}
		matches, err := filepath.Glob(full)
		if err != nil {
			p.add(path, "invalid glob %q: %s", pattern, err)
			continue
		}
		slices.Sort(matches)
		for _, m := range matches {
			if !read[m] {
				read[m] = true
				c.includeFile(p, m, dir)
			}
		}
	}
}

// includeFile merges one team file.
func (c *Config) includeFile(p *problems, file, mainDir string) {
	p.order = append(p.order, file)
	data, err := os.ReadFile(file)
	if err != nil {
		p.list = append(p.list, Problem{File: file, Message: "cannot read the included file: " + pathErr(err)})
		return
	}
	c.Files = append(c.Files, File{Path: file, Hash: fileHash(data)})
	root, err := parseYAML(data)
	if err != nil {
		p.list = append(p.list, syntaxProblem(file, data, err))
		return
	}
	if root == nil {
		p.list = append(p.list, Problem{File: file, Line: 1, Col: 1, Message: "file is empty: a team file holds team and jobs"})
		return
	}
	tp := newProblems(file)
	var tf teamFile
	exp := newExpansion(root)
	decoder{tp, exp}.decode(root, reflect.ValueOf(&tf).Elem(), "")
	if exp.refused != nil {
		p.list = append(p.list, *exp.refused)
		return
	}
	p.list = append(p.list, tp.list...)
	c.checkTeam(p, tp, &tf, file)
	c.Files[len(c.Files)-1].Team = tf.Team
	shift := map[string]int{"jobs": len(c.Jobs), "calendars": len(c.Calendars), "notify.sinks": len(c.Notify.Sinks)}
	for path, n := range tp.nodes {
		if q, ok := shifted(path, shift); ok {
			p.nodes[q], p.broken[q] = n, tp.broken[path]
			p.files[q] = file
			if reShifted.FindString(path) == path {
				p.local[q] = path
			}
		}
	}
	tf.adopt(relativeTo(mainDir, filepath.Dir(file)))
	c.Jobs = append(c.Jobs, tf.Jobs...)
	c.Calendars = append(c.Calendars, tf.Calendars...)
	c.Notify.Sinks = append(c.Notify.Sinks, tf.Notify.Sinks...)
	c.teamDefaults = append(c.teamDefaults, teamDefault{file: file, names: tf.Notify.Default, nodes: tp.nodes})
}

// adopt makes the file's jobs its team's: each gets the team and, when
// it names no sinks, the team's default ones; paths written in the file
// become relative to the main file's directory (rel).
func (tf *teamFile) adopt(rel func(string) string) {
	for i := range tf.Jobs {
		j := &tf.Jobs[i]
		j.Team = tf.Team
		if j.Notify == nil && tf.Notify.Default != nil {
			j.Notify = slices.Clone(tf.Notify.Default)
		}
		if j.HTTP != nil {
			j.HTTP.HeadersFile = rel(j.HTTP.HeadersFile)
		}
		if j.Exec != nil {
			j.Exec.EnvFile = rel(j.Exec.EnvFile)
		}
	}
	for i := range tf.Notify.Sinks {
		tf.Notify.Sinks[i].HeadersFile = rel(tf.Notify.Sinks[i].HeadersFile)
	}
}

// checkTeam checks the team name of a team file.
func (c *Config) checkTeam(p *problems, tp *problems, tf *teamFile, file string) {
	at := func(path, format string, args ...any) {
		pr := Problem{File: file, Path: path, Message: fmt.Sprintf(format, args...)}
		if n := tp.node(path); n != nil {
			pr.Line, pr.Col = n.Line, n.Column
		}
		p.list = append(p.list, pr)
	}
	switch {
	case tp.broken["team"]:
	case tf.Team == "":
		at("team", "required: the name of the team that owns this file's jobs")
	case !reName.MatchString(tf.Team):
		at("team", "invalid team name %q: want %s", tf.Team, NamePattern)
	}
}

// teamDefault is a team file's notify.default, checked once every sink of
// every file is known.
type teamDefault struct {
	file  string
	names []string
	nodes map[string]*yaml.Node
}

// checkTeamDefaults: a team's default sinks must exist, in any file.
func (c *Config) checkTeamDefaults(p *problems) {
	for _, td := range c.teamDefaults {
		for k, name := range td.names {
			if c.Sink(name) != nil {
				continue
			}
			path := fmt.Sprintf("notify.default[%d]", k)
			pr := Problem{File: td.file, Path: path, Message: fmt.Sprintf("unknown sink %q: declare it under notify.sinks of this file or of the main file", name)}
			if n := td.nodes[path]; n != nil {
				pr.Line, pr.Col = n.Line, n.Column
			}
			p.list = append(p.list, pr)
		}
	}
	c.teamDefaults = nil
}

var reShifted = regexp.MustCompile(`^(jobs|calendars|notify\.sinks)\[(\d+)\]`)

// shifted renames a team file's path to the merged config's: "jobs[0]"
// of a file merged after 5 jobs is "jobs[5]". Paths outside the merged
// lists have no place in the merged config.
func shifted(path string, shift map[string]int) (string, bool) {
	m := reShifted.FindStringSubmatch(path)
	if m == nil {
		return "", false
	}
	i, _ := strconv.Atoi(m[2])
	return m[1] + "[" + strconv.Itoa(i+shift[m[1]]) + "]" + path[len(m[0]):], true
}

// relativeTo returns a function that makes a path written in a file of
// dir relative to mainDir, the directory the config's paths are read
// from, so that a team file's headers_file sits next to the team file.
func relativeTo(mainDir, dir string) func(string) string {
	return func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		if r, err := filepath.Rel(mainDir, filepath.Join(dir, p)); err == nil {
			return r
		}
		return filepath.Join(dir, p)
	}
}
