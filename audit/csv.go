package audit

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// CSVHeader names the columns of a CSV record, one row an event.
var CSVHeader = []string{"event_id", "run", "type", "time", "path", "uri", "outcome", "problem", "length", "size", "expected", "found", "detail"}

// CSV writes the events of a run as CSV rows, for spreadsheets. The
// caller closes the writer it gives.
type CSV struct{ w *csv.Writer }

// NewCSV returns a Recorder writing CSV to w.
func NewCSV(w io.Writer) *CSV { return &CSV{w: csv.NewWriter(w)} }

// Begin writes the header.
func (c *CSV) Begin(Summary) error { return c.w.Write(CSVHeader) }

// Event writes a row.
func (c *CSV) Event(ev Event) error {
	c.w.Write([]string{ev.ID, ev.Run, ev.Type, ev.Time.Format(time.RFC3339Nano), ev.Path, ev.URI, ev.Outcome, ev.Problem,
		strconv.FormatInt(ev.Length, 10), strconv.FormatInt(ev.Size, 10), ev.Expected, ev.Found, ev.Detail})
	return c.w.Error()
}

// End flushes the rows.
func (c *CSV) End(Summary) error {
	c.w.Flush()
	return c.w.Error()
}
