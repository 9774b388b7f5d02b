package common

import (
	"context"
	"errors"
	"sync"
)

// SlowStart runs fn for 0..n-1 in batches of 1, 2, 4, ... calls in parallel, stopping after
// the first batch with a failure (as the ReplicaSet controller does): a systematic failure
// such as a rejected pod costs one call, not n. It returns how many calls succeeded.
func SlowStart(ctx context.Context, n int, fn func(ctx context.Context, i int) error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		size := min(batch, n-done)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for j := range size {
			wg.Go(func() { errs[j] = fn(ctx, done+j) })
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
			}
		}
		done += size
		if failed > 0 {
			return done - failed, errors.Join(errs...)
		}
	}
	return done, nil
}
