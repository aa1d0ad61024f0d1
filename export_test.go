package polyloop

// Exported for the external tests of this package.
var (
	ParseLogScript = parseLogScript
	RenderPlan     = renderPlan
)
