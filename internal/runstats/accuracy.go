package runstats

import "math"

// ScoreSample is one scored run: its score (0 to 1 for accuracy) and the
// cluster it belongs to (its task: the epochs of one task are not
// independent).
type ScoreSample struct {
	Cluster string
	Value   float64
}

// Estimate is a mean with its cluster-robust standard error and 95%
// interval (normal approximation). SE, Low and High are nil with fewer
// than two clusters: no interval can be given.
type Estimate struct {
	N        int      `json:"n"`
	Clusters int      `json:"clusters"`
	Mean     float64  `json:"mean"`
	SE       *float64 `json:"se"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
}

// Accuracy estimates the mean score of samples, nil for none. The standard
// error is clustered by task: with C clusters and N samples,
// SE² = C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))² / N². Sums run in the
// samples' order: the same samples in the same order give the same bits.
func Accuracy(samples []ScoreSample) *Estimate {
	if len(samples) == 0 {
		return nil
	}
	e := &Estimate{N: len(samples)}
	var sum float64
	for _, s := range samples {
		sum += s.Value
	}
	e.Mean = sum / float64(e.N)
	resid := clusterSums(samples, e.Mean)
	e.Clusters = len(resid)
	if e.Clusters < 2 {
		return e
	}
	var ss float64
	for _, r := range resid {
		ss += r * r
	}
	c, n := float64(e.Clusters), float64(e.N)
	se := math.Sqrt(c / (c - 1) * ss / (n * n))
	low, high := e.Mean-1.96*se, e.Mean+1.96*se
	e.SE, e.Low, e.High = &se, &low, &high
	return e
}

// clusterSums are the sums of the residuals x_i − mean of each cluster, in
// the order of the clusters' first samples: sums in a fixed order give the
// same bits on every call (a map's order would not).
func clusterSums(samples []ScoreSample, mean float64) []float64 {
	at := map[string]int{}
	var sums []float64
	for _, s := range samples {
		i, ok := at[s.Cluster]
		if !ok {
			i = len(sums)
			at[s.Cluster] = i
			sums = append(sums, 0)
		}
		sums[i] += s.Value - mean
	}
	return sums
}
