package otelsink

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/polyloop/polyloop"
)

// The polyloop.* attribute keys, for what the GenAI conventions have no name
// for.
const (
	attrRunID          = attribute.Key("polyloop.run_id")
	attrStep           = attribute.Key("polyloop.step")
	attrSeq            = attribute.Key("polyloop.seq")
	attrEndSeq         = attribute.Key("polyloop.end_seq")
	attrCallID         = attribute.Key("polyloop.call_id")
	attrActionID       = attribute.Key("polyloop.action_id")
	attrAttempt        = attribute.Key("polyloop.attempt")
	attrInvocation     = attribute.Key("polyloop.invocation")
	attrSnapshotHash   = attribute.Key("polyloop.snapshot_hash")
	attrResumePlan     = attribute.Key("polyloop.resume.plan")
	attrResumeStep     = attribute.Key("polyloop.resume.step")
	attrResumeReason   = attribute.Key("polyloop.resume.reason")
	attrResumeLastSeq  = attribute.Key("polyloop.resume.last_seq")
	attrStopReason     = attribute.Key("polyloop.stop_reason")
	attrActionKind     = attribute.Key("polyloop.action.kind")
	attrActionLang     = attribute.Key("polyloop.action.lang")
	attrReplay         = attribute.Key("polyloop.action.replay")
	attrActionStatus   = attribute.Key("polyloop.action.status")
	attrActionDone     = attribute.Key("polyloop.action.done")
	attrSynthetic      = attribute.Key("polyloop.observation.synthetic")
	attrTruncated      = attribute.Key("polyloop.observation.truncated_chars")
	attrDecision       = attribute.Key("polyloop.decision")
	attrCostUSD        = attribute.Key("polyloop.usage.cost_usd")
	attrModelAttempts  = attribute.Key("polyloop.model.attempts")
	attrRequestID      = attribute.Key("polyloop.model.request_id")
	attrLinkType       = attribute.Key("polyloop.link.type")
	attrPreviousHash   = attribute.Key("polyloop.previous_snapshot_hash")
	attrOverrideFields = attribute.Key("polyloop.override.fields")
	attrChildRunID     = attribute.Key("polyloop.child.run_id")
	attrReception      = attribute.Key("polyloop.child.reception")
	attrHandler        = attribute.Key("polyloop.child.handler")
	attrSpanRole       = attribute.Key("polyloop.span")
)

func baseAttrs(ev polyloop.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		semconv.GenAIConversationID(ev.RunID),
		attrRunID.String(ev.RunID),
		attrSeq.Int64(ev.Seq),
	}
	if ev.Agent != "" {
		kv = append(kv, semconv.GenAIAgentName(ev.Agent))
	}
	if ev.Step > 0 {
		kv = append(kv, attrStep.Int(ev.Step))
	}
	return kv
}

func providerAttrs(m modelParams) []attribute.KeyValue {
	var kv []attribute.KeyValue
	if m.provider != "" {
		kv = append(kv, semconv.GenAIProviderNameKey.String(m.provider))
	}
	if m.model != "" {
		kv = append(kv, semconv.GenAIRequestModel(m.model))
	}
	return kv
}

func invokeAttrs(ev polyloop.Event, m modelParams) []attribute.KeyValue {
	kv := append(baseAttrs(ev), semconv.GenAIOperationNameInvokeAgent)
	kv = append(kv, providerAttrs(m)...)
	if ev.SnapshotHash != "" {
		kv = append(kv, attrSnapshotHash.String(ev.SnapshotHash))
	}
	if ev.Kind != polyloop.EventRunResumed {
		return append(kv, attrInvocation.String("run"))
	}
	kv = append(kv, attrInvocation.String("resume"))
	if p := ev.Plan; p != nil {
		kv = append(kv, attrResumePlan.String(string(p.Action)), attrResumeStep.Int(p.Step),
			attrResumeReason.String(p.Reason), attrResumeLastSeq.Int64(p.LastSeq))
	}
	return kv
}

// rootAttrs describe the run's root span.
func rootAttrs(ev polyloop.Event, m modelParams) []attribute.KeyValue {
	kv := append(baseAttrs(ev), providerAttrs(m)...)
	kv = append(kv, attrSpanRole.String("run"))
	if ev.SnapshotHash != "" {
		kv = append(kv, attrSnapshotHash.String(ev.SnapshotHash))
	}
	return kv
}

// add counts a reply's usage; a reply with neither input nor output tokens
// reported none.
func (u *usage) add(r polyloop.Usage) {
	if r.InputTokens == 0 && r.OutputTokens == 0 {
		return
	}
	u.input += r.InputTokens
	u.output += r.OutputTokens
	u.reported = true
}

// attrs are the invocation's gen_ai.usage.*: the sum over its own model
// calls, left out when none reported usage.
func (u usage) attrs() []attribute.KeyValue {
	if !u.reported {
		return nil
	}
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.input)),
		semconv.GenAIUsageOutputTokens(int(u.output)),
	}
}

func finishAttrs(ev polyloop.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{attrStopReason.String(string(ev.StopReason)), attrEndSeq.Int64(ev.Seq)}
	if t := ev.Totals; t != nil {
		kv = append(kv,
			attribute.Int("polyloop.totals.steps", t.Steps),
			attribute.Int("polyloop.totals.model_calls", t.ModelCalls),
			attribute.Int("polyloop.totals.actions", t.Actions),
			attribute.Int64("polyloop.totals.input_tokens", t.InputTokens),
			attribute.Int64("polyloop.totals.output_tokens", t.OutputTokens),
			attribute.Float64("polyloop.totals.cost_usd", t.CostUSD),
			attribute.Bool("polyloop.totals.cost_unknown", t.CostUnknown),
			attribute.Int("polyloop.totals.unknown_model_calls", t.UnknownModelCalls),
			attribute.Int("polyloop.totals.unknown_actions", t.UnknownActions))
	}
	return kv
}

func chatAttrs(ev polyloop.Event, f runFacts) []attribute.KeyValue {
	m := f.model
	kv := append(baseAttrs(ev), semconv.GenAIOperationNameChat)
	kv = append(kv, providerAttrs(m)...)
	if f.server.address != "" {
		kv = append(kv, semconv.ServerAddress(f.server.address))
		if f.server.port > 0 {
			kv = append(kv, semconv.ServerPort(f.server.port))
		}
	}
	kv = append(kv, attrCallID.String(ev.CallID))
	if ev.Attempt > 0 {
		kv = append(kv, attrAttempt.Int(ev.Attempt))
	}
	if m.temperature != nil {
		kv = append(kv, semconv.GenAIRequestTemperature(*m.temperature))
	}
	if m.topP != nil {
		kv = append(kv, semconv.GenAIRequestTopP(*m.topP))
	}
	if m.seed != nil {
		kv = append(kv, semconv.GenAIRequestSeed(int(*m.seed)))
	}
	if m.maxTokens > 0 {
		kv = append(kv, semconv.GenAIRequestMaxTokens(m.maxTokens))
	}
	if len(m.stop) > 0 {
		kv = append(kv, semconv.GenAIRequestStopSequences(m.stop...))
	}
	return kv
}

// replyAttrs describes a reply. A reply whose usage has neither input nor
// output tokens is one the provider reported no usage for: the token
// attributes are left out rather than recorded as 0.
func replyAttrs(r *polyloop.ModelReply) []attribute.KeyValue {
	var kv []attribute.KeyValue
	if r.Usage.InputTokens != 0 || r.Usage.OutputTokens != 0 {
		kv = append(kv,
			semconv.GenAIUsageInputTokens(int(r.Usage.InputTokens)),
			semconv.GenAIUsageOutputTokens(int(r.Usage.OutputTokens)))
	}
	if r.Model != "" {
		kv = append(kv, semconv.GenAIResponseModel(r.Model))
	}
	if r.FinishReason != "" {
		kv = append(kv, semconv.GenAIResponseFinishReasons(r.FinishReason))
	}
	if r.Usage.CachedTokens > 0 {
		kv = append(kv, semconv.GenAIUsageCacheReadInputTokens(int(r.Usage.CachedTokens)))
	}
	if r.Usage.ReasoningTokens > 0 {
		kv = append(kv, semconv.GenAIUsageReasoningOutputTokens(int(r.Usage.ReasoningTokens)))
	}
	if r.Usage.CostUSD != nil {
		kv = append(kv, attrCostUSD.Float64(*r.Usage.CostUSD))
	}
	if r.Attempts > 0 {
		kv = append(kv, attrModelAttempts.Int(r.Attempts))
	}
	if r.RequestID != "" {
		kv = append(kv, attrRequestID.String(r.RequestID))
	}
	return kv
}

// toolTypeFunction is the gen_ai.tool.type of a tool call: the model fills
// in the arguments of a declared tool, and the application's executor runs
// it.
const toolTypeFunction = "function"

// toolName is the gen_ai.tool.name of an action: the tool of a tool call,
// the language of a code action (the interpreter runs it).
func toolName(a *polyloop.Action) string {
	switch {
	case a == nil:
		return ""
	case a.IsCode():
		return a.Lang
	}
	return a.Tool
}

func toolAttrs(ev polyloop.Event, content bool, tools map[string]string) []attribute.KeyValue {
	kv := append(baseAttrs(ev), semconv.GenAIOperationNameExecuteTool, attrActionID.String(ev.ActionID))
	if ev.Attempt > 0 {
		kv = append(kv, attrAttempt.Int(ev.Attempt))
	}
	if ev.Replay != "" {
		kv = append(kv, attrReplay.String(string(ev.Replay)))
	}
	a := ev.Action
	if a == nil {
		return kv
	}
	callID := a.CallID
	if callID == "" {
		callID = ev.ActionID
	}
	kv = append(kv, semconv.GenAIToolCallID(callID))
	if a.IsCode() {
		kv = append(kv, attrActionKind.String("code"), attrActionLang.String(a.Lang))
		if a.Lang != "" {
			kv = append(kv, semconv.GenAIToolName(a.Lang))
		}
		if content {
			kv = append(kv, semconv.GenAIToolCallArgumentsKey.String(a.Code))
		}
		return kv
	}
	kv = append(kv, semconv.GenAIToolName(a.Tool), semconv.GenAIToolType(toolTypeFunction), attrActionKind.String("tool"))
	if d := tools[a.Tool]; d != "" {
		kv = append(kv, semconv.GenAIToolDescription(d))
	}
	if content && len(a.Args) > 0 {
		kv = append(kv, semconv.GenAIToolCallArgumentsKey.String(string(a.Args)))
	}
	return kv
}

func outcomeAttrs(ev polyloop.Event, content bool) []attribute.KeyValue {
	var kv []attribute.KeyValue
	if o := ev.Outcome; o != nil {
		kv = append(kv, attrActionStatus.String(string(o.Status)), attrActionDone.Bool(o.Done))
		if content {
			kv = append(kv, semconv.GenAIToolCallResultKey.String(o.Observation))
		}
	}
	if r := ev.Settled(); r != nil {
		kv = append(kv, attrSynthetic.Bool(r.Synthetic), attrTruncated.Int(r.TruncatedChars))
	}
	return kv
}

func spanEventAttrs(ev polyloop.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{attrSeq.Int64(ev.Seq)}
	if ev.Step > 0 {
		kv = append(kv, attrStep.Int(ev.Step))
	}
	switch {
	case ev.StepRecord != nil:
		r := ev.StepRecord
		kv = append(kv, attrDecision.String(string(r.Decision)), attrSynthetic.Bool(r.Synthetic))
		if r.Outcome != nil {
			kv = append(kv, attrActionStatus.String(string(r.Outcome.Status)))
		}
	case ev.Override != nil:
		kv = append(kv, attrPreviousHash.String(ev.Override.PreviousHash),
			attrSnapshotHash.String(ev.Override.SnapshotHash),
			attrOverrideFields.StringSlice(ev.Override.Fields))
	case ev.Reception != nil:
		c := ev.Reception
		kv = append(kv, attrChildRunID.String(c.ChildRunID), attrStopReason.String(string(c.StopReason)),
			attrReception.String(string(c.Reception)))
		if c.Handler != "" {
			kv = append(kv, attrHandler.String(c.Handler))
		}
	}
	return kv
}
