package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// streamAbove: lists longer than this are written an element at a time,
// compact, one per line, instead of indented as one value. Encoding
// GET /api/v1/jobs of 100,000 jobs as one indented value built a 70 MB
// buffer (120 MB of allocations) before the first byte went out.
const streamAbove = 100

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Len() > streamAbove {
		writeList(w, rv)
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeList writes the slice list as a JSON array, one element per line.
// Each chunk that goes out moves the write deadline on: a long list takes
// as long as it takes while the client reads, and a client that stops
// reading is dropped writeTimeout later.
func writeList(w http.ResponseWriter, list reflect.Value) {
	bw := bufio.NewWriterSize(progress{w, http.NewResponseController(w)}, 64<<10)
	defer bw.Flush()
	bw.WriteString("[")
	for i := range list.Len() {
		b, err := json.Marshal(list.Index(i).Interface())
		if err != nil {
			// Our types always encode; a truncated answer is invalid
			// JSON, which the client will notice.
			return
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	bw.WriteString("\n]\n")
}

// progress extends the write deadline before each write.
type progress struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (p progress) Write(b []byte) (int, error) {
	_ = p.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return p.w.Write(b)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// maxMessage bounds an error message, whatever it quotes.
const maxMessage = 1024

// writeError answers {"error": {"code": ..., "message": ...}} (docs/api.md#errors).
func writeError(w http.ResponseWriter, status int, code, message string) {
	if len(message) > maxMessage {
		message = strings.ToValidUTF8(message[:maxMessage], "") + "…"
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}
