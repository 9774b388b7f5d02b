package component

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type step struct {
	name    string
	failOn  string
	journal *[]string
}

func (s step) Name() string { return s.name }
func (s step) Sync(context.Context, string) error {
	*s.journal = append(*s.journal, "sync "+s.name)
	if s.failOn == "sync" {
		return errors.New("boom")
	}
	return nil
}
func (s step) Delete(context.Context, string) error {
	*s.journal = append(*s.journal, "delete "+s.name)
	if s.failOn == "delete" {
		return errors.New("boom")
	}
	return nil
}

func TestSyncAllRunsInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	var j []string
	err := SyncAll(context.Background(), "owner", step{"a", "", &j}, step{"b", "sync", &j}, step{"c", "", &j})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "b", ce.Component)
	assert.Equal(t, []string{"sync a", "sync b"}, j, "c depends on b and is not synced")
}

func TestDeleteAllRunsInOrderAndReportsEveryFailure(t *testing.T) {
	var j []string
	err := DeleteAll(context.Background(), "owner", step{"a", "delete", &j}, step{"b", "", &j}, step{"c", "delete", &j})
	assert.Equal(t, []string{"delete a", "delete b", "delete c"}, j, "a failure does not stop the later deletions")
	assert.ErrorContains(t, err, "component c")
	assert.ErrorContains(t, err, "component a")
}
