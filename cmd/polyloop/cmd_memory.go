package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/memory"
	"github.com/spf13/cobra"
)

// memoryStore is a run store that keeps agent memory.
type memoryStore interface {
	memory.Store
	memory.ViewStore
}

func newMemoryCmd(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "memory",
		Short: "Show what agents remember: entries, their histories, views",
		Long: `Show agent memory kept in the store beside the runs (agent files' memory:
section): the live entries of namespaces, one entry's value and provenance
(the run, step and call that wrote it), every version of an entry, and the
versions of views (the entries a model was shown, at their versions).

show --view renders a version with the library's default template
(polyloop.DefaultViewTemplate), or with --agent FILE with that agent's
memory.view.template: the text its model is shown. (A run shows the template
of its own snapshot: polyloop show RUN names the version each call showed.)`,
	}
	c.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	var view, agent string
	ls := &cobra.Command{
		Use:   "ls [NAMESPACE...]",
		Short: "List the live entries of namespaces (all without arguments), and the views",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withMemory(cmd.Context(), func(ctx context.Context, s memoryStore) error { return a.memoryLs(ctx, s, args, asJSON) })
		},
	}
	show := &cobra.Command{
		Use:   "show NAMESPACE KEY | show --view NAME [VERSION] [--agent FILE]",
		Short: "Show an entry's live value and provenance, or a view version",
		Long: `Show an entry's live value and provenance, or, with --view, a version of a
view: who made it, its sources, and its members rendered as a model is shown
them — with the library's default template (polyloop.DefaultViewTemplate), or
with --agent FILE with that agent file's memory.view.template (the file is
checked, nothing is started; its view must be NAME). The first line says which
template rendered it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withMemory(cmd.Context(), func(ctx context.Context, s memoryStore) error {
				if view != "" {
					return a.memoryShowView(ctx, s, view, agent, args, asJSON)
				}
				if agent != "" {
					return errors.New("--agent goes with --view: it names the template a view version is rendered with")
				}
				return a.memoryShow(ctx, s, args, asJSON)
			})
		},
	}
	show.Flags().StringVar(&view, "view", "", "show a version of this view (the last one without VERSION)")
	show.Flags().StringVar(&agent, "agent", "", "with --view: render with this agent file's memory.view.template (default: the library's)")
	history := &cobra.Command{
		Use:   "history NAMESPACE KEY",
		Short: "List every version of an entry, deletes included, with provenance",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withMemory(cmd.Context(), func(ctx context.Context, s memoryStore) error { return a.memoryHistory(ctx, s, args, asJSON) })
		},
	}
	c.AddCommand(ls, show, history)
	return c
}

// withMemory opens the store and runs f on its memory.
func (a *app) withMemory(ctx context.Context, f func(context.Context, memoryStore) error) error {
	st, err := openStore(ctx, a.store, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	ms, ok := st.(memoryStore)
	if !ok {
		return fmt.Errorf("the store %s keeps no memory", dsn.Redact(a.store))
	}
	return f(ctx, ms)
}

func (a *app) printJSON(v any) error {
	return writeJSON(a.machineOut(), v)
}

func (a *app) memoryLs(ctx context.Context, s memoryStore, namespaces []string, asJSON bool) error {
	if len(namespaces) == 0 {
		var err error
		if namespaces, err = s.Namespaces(ctx); err != nil {
			return err
		}
	}
	var entries []memory.Entry
	for _, ns := range namespaces {
		es, err := s.LoadEntries(ctx, []string{ns})
		if err != nil {
			return err
		}
		entries = append(entries, sortEntries(es)...)
	}
	views, err := s.Views(ctx)
	if err != nil {
		return err
	}
	var versions []memory.ViewVersion
	for _, name := range views {
		v, err := s.LoadView(ctx, name)
		if err != nil {
			return err
		}
		versions = append(versions, v)
	}
	if asJSON {
		return a.printJSON(map[string]any{"entries": nonNil(entries), "views": nonNil(versions)})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tKEY\tVERSION\tWRITTEN BY\tVALUE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.Namespace, e.Key, e.Version, provenance(e.Provenance), excerpt(string(e.Value), 60))
	}
	if len(versions) > 0 {
		fmt.Fprintln(tw, "\nVIEW\tVERSION\tMEMBERS")
		for _, v := range versions {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", v.View, v.Version, len(v.Members))
		}
	}
	return tw.Flush()
}

func (a *app) memoryShow(ctx context.Context, s memoryStore, args []string, asJSON bool) error {
	if len(args) != 2 {
		return fmt.Errorf("memory show takes NAMESPACE KEY (or --view NAME)")
	}
	es, err := s.LoadEntries(ctx, []string{args[0]})
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Key != args[1] {
			continue
		}
		if asJSON {
			return a.printJSON(e)
		}
		fmt.Fprintf(a.stdout, "%s/%s version %d, written by %s (write %s)\n%s\n", e.Namespace, e.Key, e.Version,
			provenance(e.Provenance), e.Provenance.WriteID, e.Value)
		return nil
	}
	return fmt.Errorf("nothing is remembered under %s/%s (memory history shows what was)", args[0], args[1])
}

func (a *app) memoryShowView(ctx context.Context, s memoryStore, name, agent string, args []string, asJSON bool) error {
	tmpl, how, err := viewTemplateOf(name, agent)
	if err != nil {
		return err
	}
	var v memory.ViewVersion
	switch len(args) {
	case 0:
		v, err = s.LoadView(ctx, name)
	case 1:
		n, perr := strconv.ParseInt(args[0], 10, 64)
		if perr != nil || n < 1 {
			return fmt.Errorf("VERSION %q: expected a version number from 1", args[0])
		}
		v, err = s.ViewAt(ctx, name, n)
	default:
		return fmt.Errorf("memory show --view NAME takes at most a VERSION")
	}
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(v)
	}
	fmt.Fprintf(a.stdout, "view %s version %d, made by %s, sources %v; rendered with %s\n", v.View, v.Version, provenance(v.Provenance), v.Sources, how)
	text, err := polyloop.RenderView(tmpl, v.Content())
	if err != nil {
		return err
	}
	fmt.Fprint(a.stdout, text)
	return nil
}

// viewTemplateOf is the template a version of view name renders with: the
// library's default, or the memory.view.template of the agent file agent
// (checked, not built: nothing starts), whose view must be name; how says
// which.
func viewTemplateOf(name, agent string) (tmpl, how string, err error) {
	if agent == "" {
		return "", "the default template (polyloop.DefaultViewTemplate)", nil
	}
	f, err := agentfile.Check(agent)
	if err != nil {
		return "", "", err
	}
	if f.Memory == nil || f.Memory.View == nil {
		return "", "", fmt.Errorf("%s shows its model no view (no memory.view)", agent)
	}
	shown := f.Memory.View.Name
	if shown == "" {
		shown = f.Name
	}
	if shown != name {
		return "", "", fmt.Errorf("%s shows the view %q, not %q", agent, shown, name)
	}
	if f.Memory.View.Template == "" {
		return "", fmt.Sprintf("the default template (%s sets no memory.view.template)", agent), nil
	}
	return f.Memory.View.Template, fmt.Sprintf("the template of %s (memory.view.template)", agent), nil
}

func (a *app) memoryHistory(ctx context.Context, s memoryStore, args []string, asJSON bool) error {
	h, err := s.EntryHistory(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(nonNil(h))
	}
	if len(h) == 0 {
		return fmt.Errorf("%s/%s was never written", args[0], args[1])
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tWRITTEN BY\tWRITE\tVALUE")
	for _, e := range h {
		value := excerpt(string(e.Value), 60)
		if e.Deleted {
			value = "(deleted)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.Version, provenance(e.Provenance), e.Provenance.WriteID, value)
	}
	return tw.Flush()
}

// provenance is "run R step S call C", or "-" for a write outside a run.
func provenance(p memory.Provenance) string {
	if p.RunID == "" {
		return "-"
	}
	s := fmt.Sprintf("run %s step %d", p.RunID, p.Step)
	if p.CallID != "" {
		s += " " + p.CallID
	}
	return s
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func sortEntries(es []memory.Entry) []memory.Entry {
	slices.SortFunc(es, func(a, b memory.Entry) int { return strings.Compare(a.Key, b.Key) })
	return es
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
