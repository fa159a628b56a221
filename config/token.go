package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Token is a scoped API token (docs/configuration.md, "Teams and tokens"):
// the secret stays in File; Name is what logs and metrics show.
type Token struct {
	Name string `yaml:"name" json:"name"`
	File string `yaml:"file" json:"file,omitempty"`
	// Teams are the teams whose jobs the token may act on; "*" is every
	// team, "" the jobs of the main file.
	Teams []string `yaml:"teams" json:"teams"`
	// Allow are the verbs the token may use, from Verbs.
	Allow []string `yaml:"allow" json:"allow"`
}

// Verbs a token may be allowed: read covers every GET.
const (
	VerbRead     = "read"
	VerbTrigger  = "trigger"
	VerbPause    = "pause"
	VerbResume   = "resume"
	VerbCancel   = "cancel"
	VerbBackfill = "backfill"
)

// Verbs are every verb, in the order docs/configuration.md lists them.
var Verbs = []string{VerbRead, VerbTrigger, VerbPause, VerbResume, VerbCancel, VerbBackfill}

// AnyTeam in a token's teams is every team.
const AnyTeam = "*"

// AdminToken is the name logs and metrics give the token of api.token_file.
const AdminToken = "admin"

// Permits reports whether the token may use verb on a job of team.
func (t *Token) Permits(verb, team string) bool {
	return slices.Contains(t.Allow, verb) && t.Covers(team)
}

// Covers reports whether team is one of the token's teams.
func (t *Token) Covers(team string) bool {
	return slices.Contains(t.Teams, AnyTeam) || slices.Contains(t.Teams, team)
}

func (c *Config) validateTokens(p *problems) {
	names := map[string]string{}
	for i, t := range c.API.Tokens {
		path := "api.tokens[" + strconv.Itoa(i) + "]"
		if t.Name == AdminToken {
			p.add(path+".name", "%q is the name of api.token_file's token: choose another", t.Name)
		} else {
			p.declare(names, "token", t.Name, path)
		}
		if t.File == "" {
			p.add(path+".file", "required: the file that holds the token (the token itself never goes in the config)")
		}
		if len(t.Teams) == 0 {
			p.add(path+".teams", `required: the teams whose jobs the token may act on, or ["*"]`)
		}
		for k, team := range t.Teams {
			if team != AnyTeam && team != "" && !reName.MatchString(team) {
				p.add(fmt.Sprintf("%s.teams[%d]", path, k), "invalid team name %q: want %s or \"*\"", team, NamePattern)
			}
		}
		if len(t.Allow) == 0 {
			p.add(path+".allow", "required: the verbs the token may use, from %s", strings.Join(Verbs, ", "))
		}
		for k, v := range t.Allow {
			if !slices.Contains(Verbs, v) {
				p.add(fmt.Sprintf("%s.allow[%d]", path, k), "unknown verb %q: want one of %s", v, strings.Join(Verbs, ", "))
			}
		}
	}
}
