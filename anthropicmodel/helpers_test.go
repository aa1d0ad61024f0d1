package anthropicmodel

import "github.com/anthropics/anthropic-sdk-go/v2"

func anthropicUsage(input, cacheRead, cacheWrite, output int64) anthropic.Usage {
	return anthropic.Usage{InputTokens: input, CacheReadInputTokens: cacheRead,
		CacheCreationInputTokens: cacheWrite, OutputTokens: output}
}
