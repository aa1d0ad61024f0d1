package shellexec

import (
	"sort"
)

// environ builds the commands' environment: the minimal defaults, the
// allowed host variables (looked up with lookup), then the explicit values.
func environ(opts Options, lookup func(string) (string, bool)) []string {
	vars := map[string]string{
		"PATH": DefaultPath,
		"HOME": opts.Dir,
		"LANG": DefaultLang,
	}
	for _, name := range opts.EnvAllow {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for k, v := range opts.Env {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}
