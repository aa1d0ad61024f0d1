package shellexec

import (
	"sort"
)

// environ builds the commands' environment (Environ).
func environ(opts Options, lookup func(string) (string, bool)) []string {
	return Environ(opts.Dir, opts.EnvAllow, opts.Env, lookup)
}

// Environ is the scrubbed environment the shell's commands get, for any
// program run on a model's behalf (the sweep's command scorer too): PATH
// (DefaultPath), HOME (home) and LANG (DefaultLang); then the host
// variables allow names, looked up with lookup (os.LookupEnv), when set;
// then env's values. Nothing else of the host's environment — no API key,
// no store DSN — reaches it. Sorted "KEY=value" strings.
func Environ(home string, allow []string, env map[string]string, lookup func(string) (string, bool)) []string {
	vars := map[string]string{
		"PATH": DefaultPath,
		"HOME": home,
		"LANG": DefaultLang,
	}
	for _, name := range allow {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
