package dashboard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// teamScript loads jobs.js with the little of a DOM its byTeam uses and
// prints what the filter keeps and offers, for each choice of team.
const teamScript = `
const fs = require('fs'), vm = require('vm');
const options = [{ value: '*' }];
const select = { value: '*', get options() { return options; }, append(o) { options.push(o); } };
const window = {
  SchedulerDOM: { $: (id) => (id === 'team-filter' ? select : null), el: (tag, a) => ({ value: a.value, text: a.text }) },
  SchedulerAPI: { problem: () => '' },
};
vm.runInNewContext(fs.readFileSync(process.argv[2], 'utf8'), { window, document: {} });
const jobs = [{ name: 'cleanup', team: '' }, { name: 'settle', team: 'payments' }, { name: 'reindex', team: 'search' }, { name: 'refund', team: 'payments' }];
for (const choice of ['*', 'payments', '']) {
  select.value = choice;
  console.log(JSON.stringify(choice) + ': ' + window.SchedulerJobs.byTeam(jobs).map((j) => j.name).join(','));
}
console.log('offered: ' + options.map((o) => o.value).join(','));
`

// The dashboard's team filter (docs/configuration.md, "Teams and tokens")
// keeps the chosen team's jobs and offers every team the jobs name once.
func TestTeamFilter(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := filepath.Join(t.TempDir(), "team.js")
	if err := os.WriteFile(script, []byte(teamScript), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, script, "jobs.js").CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := `"*": cleanup,settle,reindex,refund
"payments": settle,refund
"": cleanup
offered: *,,payments,search`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
