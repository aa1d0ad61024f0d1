package provider

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults of the retry bounds and of the attempt timeout in Settings.
const (
	DefaultMaxBackoff    = 30 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
	DefaultTimeout       = 10 * time.Minute
)

// retryPolicy is the explicit retry configuration of one call.
type retryPolicy struct {
	retries       int           // ModelParams.Retries
	base          time.Duration // ModelParams.RetryBackoffMS
	maxBackoff    time.Duration
	maxRetryAfter time.Duration
}

// delay says whether the failure of attempt (1-based) is retried, and after
// how long: 429, 5xx and connection errors are; the wait is the exponential
// backoff, or the server's Retry-After when that is longer. A Retry-After
// beyond maxRetryAfter ends the retries.
func (p retryPolicy) delay(err error, attempt int) (time.Duration, bool) {
	if attempt > p.retries {
		return 0, false
	}
	var r retryable
	if !errors.As(err, &r) {
		return 0, false
	}
	after, ok := r.retryWait()
	if !ok || after > p.maxRetryAfter {
		return 0, false
	}
	return max(p.backoff(attempt), after), true
}

// backoff is base × 2^(attempt-1), capped at maxBackoff.
func (p retryPolicy) backoff(attempt int) time.Duration {
	if p.base <= 0 {
		return 0
	}
	f := float64(p.base) * math.Pow(2, float64(attempt-1))
	if f >= float64(p.maxBackoff) {
		return p.maxBackoff
	}
	return time.Duration(f)
}

// retryAfter reads retry-after-ms, then Retry-After (seconds or an HTTP
// date). It returns 0 when neither is usable.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < math.MaxInt64/1e6 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < math.MaxInt64/1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
