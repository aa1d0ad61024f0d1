package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// Tamper is raw access to a durable store's records table behind the
// store's back: what a disk fault, a bad restore or a hand edit does.
type Tamper interface {
	// Rows returns the run's rows in seq order.
	Rows(t testing.TB, runID string) []polyloop.Row
	// Put overwrites the row at row.Seq with row's kind, data and checksum.
	Put(t testing.TB, runID string, row polyloop.Row)
	// Delete removes the row at seq.
	Delete(t testing.TB, runID string, seq int64)
}

// NewTampered returns a fresh store and raw access to its records.
type NewTampered func(t *testing.T) (polyloop.Store, Tamper)

// corruptSteps is the length of the damaged runs: 18 records.
const corruptSteps = 3

// Corruption damages the stored log of a finished run of workload W in each
// way a log gets damaged — bytes changed inside strings, a record cut
// short, records swapped, a record missing, a newer or a missing format
// version — and checks that ReadLog reports each as a
// *polyloop.CorruptLogError naming the run, the seq and the kind (a newer
// version: polyloop.ErrLogVersion, naming run and seq), that nothing
// panics, and that Resume refuses the damaged log without writing to it.
func Corruption(t *testing.T, newStore NewTampered) {
	tests := []struct {
		name string
		fn   func(t *testing.T, d *damaged)
	}{
		{"FlippedByteInString", testFlippedByte},
		{"RandomFlipsInStrings", testRandomFlips},
		{"UncheckedRecords", testUnchecked},
		{"TruncatedRecord", testTruncated},
		{"SwappedRecords", testSwapped},
		{"SeqGap", testSeqGap},
		{"NewerVersion", testNewerVersion},
		{"NoVersion", testNoVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, raw := newStore(t)
			d := &damaged{s: s, raw: raw, run: runName(t, "corrupt"), w: workload.W{Steps: corruptSteps}}
			if err := RunW(context.Background(), d.w, d.w.Runner(s), d.run); err != nil {
				t.Fatal(err)
			}
			d.rows = raw.Rows(t, d.run)
			if len(d.rows) != int(d.w.RecordsPerRun()) {
				t.Fatalf("%d rows, want %d", len(d.rows), d.w.RecordsPerRun())
			}
			tc.fn(t, d)
		})
	}
}

// damaged is a finished run and raw access to its rows.
type damaged struct {
	s    polyloop.Store
	raw  Tamper
	run  string
	w    workload.W
	rows []polyloop.Row // as written
}

// put stores row and checks that ReadLog finds the log corrupt at seq for
// a reason containing why, then that Resume refuses it without writing.
func (d *damaged) put(t *testing.T, row polyloop.Row, seq int64, why string) {
	t.Helper()
	d.raw.Put(t, d.run, row)
	d.wantCorrupt(t, seq, why)
}

func (d *damaged) wantCorrupt(t *testing.T, seq int64, why string) {
	t.Helper()
	_, err := polyloop.ReadLog(context.Background(), d.s, d.run)
	d.checkCorrupt(t, err, seq, why)
	d.resumeRefused(t, polyloop.ErrCorruptLog)
}

// checkCorrupt checks that err says the log is corrupt at seq, naming the
// run and the kind, for a reason containing why.
func (d *damaged) checkCorrupt(t *testing.T, err error, seq int64, why string) {
	t.Helper()
	var ce *polyloop.CorruptLogError
	if !errors.As(err, &ce) || ce.RunID != d.run || ce.Seq != seq || ce.Kind == "" || !strings.Contains(ce.Reason, why) {
		t.Fatalf("ReadLog of the damaged log: %v; want a corrupt log of run %q at seq %d, with its kind, saying %q", err, d.run, seq, why)
	}
}

// resumeRefused checks that Resume fails with want and leaves every row as
// it was.
func (d *damaged) resumeRefused(t *testing.T, want error) {
	t.Helper()
	before := d.raw.Rows(t, d.run)
	_, err := d.w.Runner(d.s).Resume(context.Background(), d.run, d.w.Agent())
	if !errors.Is(err, want) {
		t.Fatalf("Resume of the damaged log: %v, want %v", err, want)
	}
	if after := d.raw.Rows(t, d.run); !sameRows(before, after) {
		t.Fatalf("Resume wrote to the damaged log: %d rows before, %d after", len(before), len(after))
	}
}

func sameRows(a, b []polyloop.Row) bool {
	return slices.EqualFunc(a, b, func(x, y polyloop.Row) bool {
		return x.Seq == y.Seq && x.Kind == y.Kind && bytes.Equal(x.Data, y.Data) && x.Unchecked == y.Unchecked && x.Checksum == y.Checksum
	})
}

// row returns a copy of the stored row at seq.
func (d *damaged) row(seq int64) polyloop.Row {
	r := d.rows[seq]
	r.Data = slices.Clone(r.Data)
	return r
}

// seqOf returns the seq of the first row of kind.
func (d *damaged) seqOf(t *testing.T, kind polyloop.RecordKind) int64 {
	for _, r := range d.rows {
		if r.Kind == kind {
			return r.Seq
		}
	}
	t.Fatalf("no %s record", kind)
	return -1
}

// withCRC is r with the checksum of its data, as a store writes it.
func withCRC(r polyloop.Row) polyloop.Row {
	r.Checksum, r.Unchecked = Checksum(r.Data), false
	return r
}

// Checksum is the CRC-32C of a row's data (polyloop.Row.Checksum).
func Checksum(data []byte) uint32 { return crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)) }

// testFlippedByte: "ok" becomes "oK" inside a string — still valid JSON,
// still a valid record; only the checksum tells.
func testFlippedByte(t *testing.T, d *damaged) {
	seq := d.seqOf(t, polyloop.KindStepCompleted)
	r := d.row(seq)
	i := bytes.Index(r.Data, []byte("noop result"))
	if i < 0 {
		t.Fatal("no observation in the step record")
	}
	r.Data[i+1] = 'O'
	d.put(t, r, seq, "checksum mismatch")
}

// testRandomFlips changes one random byte inside a random string of a
// random record, many times over: every change is found, at its seq.
func testRandomFlips(t *testing.T, d *damaged) {
	rng := rand.New(rand.NewPCG(20261201, uint64(len(d.rows))))
	for range 100 {
		seq := rng.Int64N(int64(len(d.rows)))
		r := d.row(seq)
		spans := stringSpans(r.Data)
		sp := spans[rng.IntN(len(spans))]
		if sp[1] == sp[0] {
			continue // an empty string
		}
		i := sp[0] + rng.IntN(sp[1]-sp[0])
		r.Data[i] ^= byte(1 + rng.IntN(255))
		d.raw.Put(t, d.run, r)
		_, err := polyloop.ReadLog(context.Background(), d.s, d.run)
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.Seq != seq || ce.RunID != d.run {
			t.Fatalf("byte %d of record %d changed (%q): ReadLog gave %v, want a corrupt log at seq %d", i, seq, r.Data[max(i-10, 0):min(i+10, len(r.Data))], err, seq)
		}
		d.raw.Put(t, d.run, d.row(seq))
	}
	if _, err := polyloop.ReadLog(context.Background(), d.s, d.run); err != nil {
		t.Fatalf("the log with every record restored: %v", err)
	}
}

// stringSpans returns the [start, end) byte ranges of the contents of the
// JSON strings of data (keys included).
func stringSpans(data []byte) [][2]int {
	var spans [][2]int
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		spans = append(spans, [2]int{i + 1, j})
		i = j
	}
	return spans
}

// testUnchecked: records written before the store kept checksums (none
// stored) still read; a change that leaves valid UTF-8 cannot be told from
// the data (the documented limit of unchecked records), and invalid UTF-8
// is still found.
func testUnchecked(t *testing.T, d *damaged) {
	for seq := range d.rows {
		r := d.row(int64(seq))
		r.Unchecked = true
		d.raw.Put(t, d.run, r)
	}
	if _, err := polyloop.ReadLog(context.Background(), d.s, d.run); err != nil {
		t.Fatalf("a log without checksums: %v", err)
	}
	seq := d.seqOf(t, polyloop.KindStepCompleted)
	r := d.row(seq)
	r.Unchecked = true
	i := bytes.Index(r.Data, []byte("noop result"))
	r.Data[i+1] = 'O'
	d.raw.Put(t, d.run, r)
	l, err := polyloop.ReadLog(context.Background(), d.s, d.run)
	if err != nil || !strings.Contains(l.Steps()[0].Observation, "nOop result") {
		t.Fatalf("an unchecked record changed within UTF-8 reads as changed (nothing can tell): %v", err)
	}
	r.Data[i+1] = 0xff
	d.put(t, r, seq, "invalid UTF-8")
}

// testTruncated: a record cut short, with and without its checksum.
func testTruncated(t *testing.T, d *damaged) {
	seq := d.seqOf(t, polyloop.KindModelCallResult)
	r := d.row(seq)
	r.Data = r.Data[:len(r.Data)/2]
	d.put(t, r, seq, "checksum mismatch")
	r.Unchecked = true
	d.put(t, r, seq, "does not decode")
}

// testSwapped: two records exchange places, each with its own checksum.
func testSwapped(t *testing.T, d *damaged) {
	a, b := d.row(3), d.row(4)
	a.Seq, b.Seq = 4, 3
	d.raw.Put(t, d.run, a)
	d.raw.Put(t, d.run, b)
	d.wantCorrupt(t, 3, "record stored at seq 3 says seq 4")
}

// testSeqGap: a record in the middle is gone.
func testSeqGap(t *testing.T, d *damaged) {
	d.raw.Delete(t, d.run, 5)
	d.wantCorrupt(t, 6, "seq gap: record 5 is missing before it")
}

// testNewerVersion: a record of a newer major version (with a checksum of
// its own) is refused as such, naming the run and the seq, and not
// reported as corruption.
func testNewerVersion(t *testing.T, d *damaged) {
	r := d.row(6)
	r.Data = bytes.Replace(r.Data, []byte(`,"v":1,`), []byte(`,"v":4,`), 1)
	d.raw.Put(t, d.run, withCRC(r))
	_, err := polyloop.ReadLog(context.Background(), d.s, d.run)
	if !errors.Is(err, polyloop.ErrLogVersion) || errors.Is(err, polyloop.ErrCorruptLog) || !strings.Contains(err.Error(), fmt.Sprintf("run %q: record 6", d.run)) {
		t.Fatalf("ReadLog of a log with a v4 record: %v, want ErrLogVersion naming the run and record 6", err)
	}
	d.resumeRefused(t, polyloop.ErrLogVersion)
}

// testNoVersion: a record without its version field, which no writer
// leaves out, is corruption.
func testNoVersion(t *testing.T, d *damaged) {
	r := d.row(6)
	r.Data = bytes.Replace(r.Data, []byte(`,"v":1,`), []byte(`,`), 1)
	d.put(t, withCRC(r), 6, "no version field")
}
