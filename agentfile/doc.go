// Package agentfile loads agent files: one YAML file per agent that says
// everything about it except where runs are stored and where events go.
//
//	name: shell-agent
//	system: You are a careful engineer working in a shell.   # or system_file: prompt.md
//	model:
//	  provider: openai          # openai | anthropic | script
//	  model: gpt-4o-mini
//	  base_url: http://localhost:8000/v1/   # any OpenAI-compatible server
//	  temperature: 0
//	  top_p: 1
//	  max_output_tokens: 1024
//	  seed: 7
//	  stop: ["</done>"]
//	  retries: 2
//	  retry_backoff_ms: 500
//	  parallel_tool_calls: false    # may the model call several tools in one reply (default: the provider's, yes)
//	  api_key_env: MY_GATEWAY_KEY   # default OPENAI_API_KEY / ANTHROPIC_API_KEY
//	  prices: {gpt-4o-mini: {input: 0.15, output: 0.60, cached_input: 0.075}}   # USD per million tokens;
//	                            # default: the shipped prices, on the provider's own API only
//	parser:
//	  kind: toolcall            # toolcall | json | code
//	  options: {require_action: true}   # toolcall: require_action; json: ignore, text_is_final;
//	                                    # toolcall and json: max_actions_per_step (default 0: no bound),
//	                                    #   check_args (default true: arguments checked against the tools' schemas);
//	                                    # code: lang, tags, final_marker
//	parallel_actions: true      # the actions of one reply run concurrently (default false: in order)
//	tools:
//	  shell: {dir: work, timeout_ms: 30000, output_limit: 10000, env_allow: [GOPATH],
//	          env: {CI: "1"}, done_sentinel: SUBMIT, shell: bash, replay: never_replay,
//	          approval: required, approval_deadline: 24h}   # each command waits for polyloop approve
//	  mcp:
//	    - {name: files, command: mcp-files, args: [--root, .], env_allow: [HOME], tools: [read_file, write_file],
//	       replay: {read_file: replay_safe}, approval: {write_file: required}, approval_deadline: 4h}
//	    - {name: search, url: https://mcp.example.com/mcp, headers_env: {Authorization: SEARCH_MCP_AUTH}}
//	    - {name: docs, url: https://docs.example.com/mcp, prefix: docs_,
//	       oauth: {client_id_env: DOCS_CLIENT_ID, client_secret_env: DOCS_CLIENT_SECRET,
//	               token_cache: .polyloop/oauth/docs.json}}
//	  deferred:                 # results delivered from outside (polyloop deliver); never executed
//	    - {name: human_review, description: "A maintainer reviews the change.",
//	       parameters: {type: object, properties: {summary: {type: string}}}, deadline: 72h}
//	limits: {max_steps: 30, max_tokens: 200000, max_cost_usd: 0.5, observation_limit: 8000,
//	         time_limit: 30m, working_limit: 10m}
//	synthetic: {not_executed: "...", env_error: "...", denied: "..."}   # defaults: polyloop.DefaultNotExecuted, DefaultEnvError, DefaultDenied
//
// A scripted model (provider script) answers from the file itself, offline:
// turn i answers step i+1.
//
//	model:
//	  provider: script
//	  cost_per_token: 0.000001
//	  script:
//	    - {tool: bash, args: {command: ls}}       # a native tool call (id: default call_<n>)
//	    - {text: "Done: 3 files.", delay_ms: 50}  # a text reply
//	    - {fail: "503 service unavailable"}       # a model failure: the run ends llm_error
//
// The reference of every key, with its type, default and an example, is
// docs/agent-file.md; docs/agent-file.schema.json is a JSON Schema of the
// file for editors. Tests keep both true to this package's File.
//
// # Checking
//
// Check (and Load, which calls it) refuses an agent file before anything
// runs, reporting every problem at once, each with its file, line and column
// and what was expected: YAML syntax, duplicate keys, unknown keys (a typo
// must never silently become a default; the message gives the closest key
// and the keys of that mapping), values of the wrong type (nothing is
// converted silently: 1.5 is not an integer, "3" not a number), values out
// of range, options that do not belong to the chosen provider or parser
// kind, an unreadable system_file. Load refuses, besides, a cost budget
// (limits.max_cost_usd) on a model whose price the client does not know
// (model.prices, or cost_per_token for a script, say it): such a budget
// could never stop a run. The error matches polyloop.ErrUncheckableBudget.
// Load reports it, and a provider's missing API key, in the same list as
// Check's problems: every problem found without starting anything at once.
// What needs the MCP servers started (the tools they offer, their schemas)
// is checked only when there is no other problem; until then the error is
// an *UncheckedError naming the servers. An empty or comment-only file is
// refused as empty. The errors match ErrInvalid; a list of them is an
// ErrorList.
//
// The file is decoded over go-yaml's syntax tree, one value at a time.
// Anchors, aliases and merge keys work, within limits that refuse a hostile
// file before it can exhaust memory (MaxFileSize, MaxDepth, MaxAliases,
// MaxAliasExpansion; errors match ErrLimit): the size before parsing, the
// nesting on the tokens before parsing, the aliases on the tree before
// anything is expanded.
//
// # Secrets
//
// Secrets come from the environment only. An agent file holding something
// that looks like a credential — a well-known key shape (sk-..., sk-ant-...,
// ghp_..., AKIA...), a bearer token, a password in a URL, or a long single
// token under a key-ish name (api_key, *_TOKEN, *_SECRET, password...), a
// key-ish query parameter in base_url or an MCP url (?api_key=...) — is
// refused with an error matching ErrSecret, which names the position but
// never repeats the value. The key-ish name rule reads configuration names
// and env maps; it does not read names that are the user's data — a scripted
// turn's tool arguments, the tool names of a replay override, the header
// names of headers_env — where only the value shapes are checked.
//
// An MCP server over HTTP gets its credentials from headers_env: each header
// is set on every request, with the value of the named environment variable
// read when the file is loaded (an unset variable is an error). Neither the
// values nor the headers enter the snapshot. Or it is authorized with OAuth
// (oauth, see OAuthSpec): the client's id and secret come from environment
// variables, the token is kept in token_cache (mode 0600), never in a
// record, an event or the snapshot. prefix puts a prefix before each of a
// server's tool names, so that two servers offering the same name can serve
// one agent.
//
// # Gates
//
// A tool may wait for a person's decision (approval: required, on the shell
// or per MCP tool) or have its results delivered from outside (a deferred
// tool): the run is suspended until polyloop approve or polyloop deliver
// answers, then resume goes on (package polyloop, Runner.Approve and
// Runner.Deliver). approval_deadline and a deferred tool's deadline are Go
// durations from the request. An approval policy is a Go function
// (polyloop.Agent.ApprovalPolicy): a file cannot give one, and approval:
// policy is refused. Code actions are gated by no tool, so a shell approval
// with parser kind code is refused.
//
// # Load
//
// Load builds a Config: the polyloop.Agent (its tools are those the
// executors offer, with the replay policies in force) and the three seams
// the file configures: ModelClient, DecisionParser, ActionExecutor. The
// caller owns the Store and the Sinks (Config.Runner takes them). Relative
// paths (system_file, tools.shell.dir, tools.mcp[].dir) are relative to the
// agent file's directory; an empty shell dir is the current directory, and
// a missing one is created. With
// a shell and MCP servers, or several servers, one executor routes each
// action to the source that offers its tool (code actions go to the shell);
// tool names must be unique across sources. An agent with gates is always
// routed: the router lists the tools with their gates, and refuses an action
// of a deferred tool as not executed (the loop never hands it one).
package agentfile
