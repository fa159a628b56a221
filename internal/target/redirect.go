package target

import (
	"errors"
	"net/http"
	"strings"
)

// maxRedirects is net/http's own limit, kept because a CheckRedirect of our
// own replaces the default that enforces it.
const maxRedirects = 10

// checkRedirect follows redirects for jobs with follow_redirects, but once a
// redirect leaves the job's host (host:port: another port is another
// service) it sends none of the headers the request started with: the job's
// own (an X-Api-Key, a token) and the X-Scheduler-* values. net/http drops
// only Authorization and Cookie across domains; a job header is as likely a
// credential, and a redirect is the target's choice, not the job author's.
//
// Every hop's headers are copied afresh from the first request before this
// runs, so the check looks at the whole chain: a redirect back to the
// original host after a detour does not get the headers back either, since
// the host in between chose where it leads.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0]
	left := !sameHost(req, first)
	for _, r := range via[1:] {
		left = left || !sameHost(r, first)
	}
	if left {
		for k := range first.Header {
			req.Header.Del(k)
		}
	}
	return nil
}

func sameHost(a, b *http.Request) bool {
	return strings.EqualFold(a.URL.Host, b.URL.Host)
}
