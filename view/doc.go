// Package view serves a read-only web page of a store's runs: the runs
// list, a run's trajectory, two runs compared step by step, and
// statistics drawn as SVG. `polyloop view` serves it on loopback; a Go
// service may mount it with New.
//
// Pages:
//
//	/                 the runs list: filters, sort and page in the URL
//	/run?id=ID        a run's trajectory (a sweep's run: its scores with
//	                  their explanations), its gates (pending ones with
//	                  their arguments and deadlines), each step's
//	                  maintenance (operations, proposals received, done or
//	                  not) and the view version each model call showed,
//	                  and its resume history;
//	                  an unfinished run's page follows its log live
//	                  (server-sent events from /live), with the model's
//	                  text as it streams when Options.Previews has it;
//	                  while a live process holds the run's lease (a
//	                  polyloop.LeaseProber store says so) the page says
//	                  "running (pid N on HOST, since T)" instead of what
//	                  resume would do, and its open executions are under
//	                  way, not of unknown outcome
//	/compare?a=A&b=B  two runs aligned by step, the first divergence marked
//	/stats            statistics of the runs the list's filters select,
//	                  grouped by agent or snapshot hash; per sweep with
//	                  Options.Sweeps
//	/sweeps           the sweeps (with Options.Sweeps)
//	/sweep?name=N     a sweep's statistics (polyloop stats --sweep's
//	                  numbers: outcomes by stop reason, attempts per
//	                  outcome, accuracy, pass@k and pass^k, the runs'
//	                  statistics; grouped by agent, configuration, task or
//	                  epoch) and its samples table with scores and
//	                  explanations, filtered and sorted by score
//	                  (polyloop samples's)
//
// Streamed text is not in the log: only the process that calls the model
// sees it. PreviewSink, an event sink of that process's runners, keeps the
// current attempt's text of each call under way and is the Previews of its
// Server (polyloop run --view); a superseded attempt's text is dropped,
// never glued to the next, and the recorded reply replaces it.
//
// The runs list reads one page of summaries at a time through
// polyloop.RunLister (Limit and a keyset cursor, newest or oldest first),
// so a store of any size lists in the time of one page; sorting by another
// column sorts in memory and is refused beyond Options.MaxSort runs.
//
// Bounds: a run's page and a comparison show Options.StepsPerPage steps
// (default polyloop.ViewStepsPerPage) per page, ?page=N, so that what a
// page writes does not grow with the run (an unfinished run opens on its
// last page, which its live stream follows); a page number beyond
// polyloop.MaxViewPage is a bad request; a server holds at most
// Options.MaxStreams live streams (default polyloop.MaxViewStreams), and
// refuses one more with 503. A sweep's page shows its samples table
// StepsPerPage rows a page, and reads the ledger keeping only the rows up
// to the page's end (sweep.SampleQuery.Limit). A run's page, its live
// stream and a comparison read the log a chunk of rows at a time
// (Store.ReadRowsFrom, polyloop.StreamLog) and fold it as they read it,
// keeping only the page's steps (trajectory.LoadPage, BuildPageStream) and
// no conversation history; a comparison reads and folds its two runs side
// by side, once (polyloop.DiffObserve); the runs list folds the logs of
// its unfinished runs alike (for their totals). So what a page holds, and
// what a request holds at its peak while it reads, do not grow with the
// run (TestRunPageMemory: about 50 KB kept for page 1 of a 100-step and of
// a 10,000-step run, 100 KB for a comparison; TestRequestPeakMemory: a
// peak of about 115 KB for a run's page or its live stream, 205 KB for a
// comparison, 70 KB for the list, at 1,000 and at 10,000 steps —
// docs/design/0049). What a
// request allocates in total, then drops, still grows with the run, as it
// reads every row: about 1 KB a step for a run's page (11.3 MB for 10,000
// steps), 3.3 KB for a comparison (checked at 1.5 and 4 KB a step).
// The live stream splits every text at each line terminator an event
// stream knows (CRLF, LF, CR) into data lines, so no text can end a field
// and forge another (an end event, an id).
//
// Safety: every handler only reads (GET and HEAD; other methods get 405);
// every text from a model, a tool or a run id reaches the page through
// html/template's contextual escaping, never as markup; the pages carry a
// Content-Security-Policy that allows no inline script, no inline style,
// no plug-ins, no frames and no other origin (the page's script and style
// are served from the binary, no CDN, no network); requests whose Host
// header is not loopback (or an allowed host) are refused, which defeats
// DNS rebinding.
package view
