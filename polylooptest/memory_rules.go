package polylooptest

// The rules of the memory ports (memory.Store, memory.ViewStore), one per
// check.
const (
	ruleMemEmpty          rule = "loading namespaces with no entries MUST give no entries and no error"
	ruleMemRoundTrip      rule = "a committed value MUST read back byte for byte, with its version and provenance"
	ruleMemVersions       rule = "each commit of an entry MUST take the next version, a delete a tombstone, and the history MUST keep them all"
	ruleMemHeads          rule = "EntryHeads MUST give each entry's last version, a tombstone included, once, and nothing for an entry never written"
	ruleMemBasis          rule = "a commit whose basis is stale MUST fail with memory.ErrBasisMismatch and write nothing of the batch"
	ruleMemIdempotent     rule = "a committed write id MUST return its commit again and write nothing; other operations under it MUST be ErrWriteIDReused"
	ruleMemIsolated       rule = "namespaces and keys that differ by case, prefix or wildcards MUST be separate"
	ruleMemOneWriterWins  rule = "of writers racing on one entry from one basis, exactly one MUST commit"
	ruleMemConcurrentKeys rule = "concurrent writers of different entries MUST all commit"
	ruleViewVersions      rule = "view versions MUST be made by compare-and-set from their basis and MUST be immutable"
	ruleViewIdempotent    rule = "a committed view write id MUST return its version again and write nothing"
	ruleViewOneWriterWins rule = "of view writers racing from one basis, exactly one MUST commit"
	ruleMemCancelled      rule = "a call with a cancelled context MUST work or fail with context.Canceled, writing all or nothing"
	ruleMemDurable        rule = "entries, histories, write ids and views MUST survive a restart"
)

var memoryRules = []rule{ruleMemEmpty, ruleMemRoundTrip, ruleMemVersions, ruleMemHeads, ruleMemBasis, ruleMemIdempotent, ruleMemIsolated, ruleMemOneWriterWins, ruleMemConcurrentKeys, ruleViewVersions, ruleViewIdempotent, ruleViewOneWriterWins, ruleMemCancelled, ruleMemDurable}

// memoryRuleOf is the rule each memory check checks.
var memoryRuleOf = map[string]rule{
	"Empty":              ruleMemEmpty,
	"RoundTrip":          ruleMemRoundTrip,
	"Versions":           ruleMemVersions,
	"Heads":              ruleMemHeads,
	"BasisMismatch":      ruleMemBasis,
	"Idempotent":         ruleMemIdempotent,
	"NamespacesIsolated": ruleMemIsolated,
	"ConcurrentWriters":  ruleMemOneWriterWins,
	"ConcurrentKeys":     ruleMemConcurrentKeys,
	"ViewVersions":       ruleViewVersions,
	"ViewIdempotent":     ruleViewIdempotent,
	"ViewConcurrent":     ruleViewOneWriterWins,
	"CancelledContext":   ruleMemCancelled,
	"Reopen":             ruleMemDurable,
}
