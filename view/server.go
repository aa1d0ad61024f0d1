package view

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

// Store is what the view reads: run logs and the listing of runs.
type Store interface {
	polyloop.Store
	polyloop.RunLister
}

// Options configure a Server. Store is required.
type Options struct {
	Store Store
	// Sweeps gives the sweep, task and score columns and the sweeps page;
	// nil shows none.
	Sweeps Sweeps
	// Previews gives the live page the model's text while it streams; nil
	// shows the records only.
	Previews Previews
	// Snapshots is the store of environment snapshots (the one the runs'
	// environments wrote to): the comparison of two runs with environments
	// lists the files that differ between them. Nil shows none.
	Snapshots polyloop.BlobStore
	// PageSize is the number of runs per page (default 50).
	PageSize int
	// MaxSort bounds the runs sorted by a column other than the start time,
	// which are sorted in memory (default 10,000).
	MaxSort int
	// Poll is how often a live page's log is read again (default 500 ms).
	Poll time.Duration
	// MaxStreams bounds the live streams open at once; one more is
	// refused with 503 (default polyloop.MaxViewStreams).
	MaxStreams int
	// StepsPerPage is the number of steps a run's page and a comparison
	// show per page (default polyloop.ViewStepsPerPage, at most
	// polyloop.MaxViewPage).
	StepsPerPage int
	// AllowedHosts are the Host header values accepted besides loopback
	// ones (localhost, 127.0.0.0/8, ::1, with any port).
	AllowedHosts []string
	// Logger receives the errors of requests; nil: slog.Default().
	Logger *slog.Logger
}

// Server is the view's http.Handler.
type Server struct {
	opts  Options
	pages *template.Template
	mux   *http.ServeMux
	// streams holds a token per live stream open (Options.MaxStreams).
	streams chan struct{}
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// csp allows the page's own script and style and nothing else: no inline
// script or style, no other origin, no frames, no plug-ins, no forms
// posting anywhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// New returns a Server reading opts.Store.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("view: Options.Store is required")
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.MaxSort <= 0 {
		opts.MaxSort = 10000
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = polyloop.MaxViewStreams
	}
	if opts.StepsPerPage <= 0 {
		opts.StepsPerPage = polyloop.ViewStepsPerPage
	}
	opts.StepsPerPage = min(opts.StepsPerPage, polyloop.MaxViewPage)
	opts.PageSize = min(opts.PageSize, polyloop.MaxViewPage)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("view: templates: %w", err)
	}
	s := &Server{opts: opts, pages: pages, mux: http.NewServeMux(), streams: make(chan struct{}, opts.MaxStreams)}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("/{$}", s.runs)
	s.mux.HandleFunc("/run", s.run)
	s.mux.HandleFunc("/compare", s.compare)
	s.mux.HandleFunc("/stats", s.stats)
	s.mux.HandleFunc("/sweeps", s.sweeps)
	s.mux.HandleFunc("/sweep", s.sweep)
	s.mux.HandleFunc("/live", s.live)
	return s, nil
}

// ServeHTTP implements http.Handler: GET and HEAD only, from an allowed
// host, with the security headers on every answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the view is read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if !s.allowedHost(r.Host) {
		http.Error(w, "host not allowed: the view answers on loopback names (see --allow-host)", http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// allowedHost reports whether a Host header names loopback or an allowed
// host.
func (s *Server) allowedHost(hostport string) bool {
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(a, hostport) {
			return true
		}
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// render executes a page template into a buffer first, so that a failure
// gives an error page rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("rendering %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// errorPage is the data of the error template.
type errorPage struct {
	Title   string
	Status  int
	Message string
}

// fail answers an error page; the message is escaped like any text.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status == http.StatusInternalServerError {
		s.opts.Logger.Error("polyloop view", "path", r.URL.Path, "error", err)
	}
	var buf bytes.Buffer
	if terr := s.pages.ExecuteTemplate(&buf, "error", errorPage{Title: http.StatusText(status), Status: status, Message: err.Error()}); terr != nil {
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// notFound is the status of a store error: 404 for an unknown run.
func notFound(err error) int {
	if errors.Is(err, polyloop.ErrRunNotFound) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}
