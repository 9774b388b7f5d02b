package backend

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeConfigIsStrict(t *testing.T) {
	type cfg struct {
		Queue string `json:"queue,omitempty"`
		Limit int    `json:"limit,omitempty"`
	}
	cases := []struct {
		name    string
		raw     string
		want    cfg
		wantErr string
	}{
		{name: "empty", raw: "", want: cfg{}},
		{name: "null", raw: " null ", want: cfg{}},
		{name: "fields", raw: `{"queue":"a","limit":3}`, want: cfg{Queue: "a", Limit: 3}},
		{name: "unknown field", raw: `{"queu":"a"}`, wantErr: `unknown field "queu"`},
		{name: "wrong case", raw: `{"Queue":"a"}`, wantErr: `unknown field "Queue"`},
		{name: "duplicate field", raw: `{"queue":"a","queue":"b"}`, wantErr: `duplicate field "queue"`},
		{name: "trailing data", raw: `{"queue":"a"} {}`, wantErr: "decoding scheduler profile config"},
		{name: "wrong type", raw: `{"limit":"3"}`, wantErr: "decoding scheduler profile config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got cfg
			err := DecodeConfig([]byte(tc.raw), &got)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLoadConfigDecodesThenValidates(t *testing.T) {
	type cfg struct {
		Queue string `json:"queue,omitempty"`
	}
	defaultQueue := func(c *cfg) error {
		if c.Queue == "" {
			c.Queue = "default"
		}
		if c.Queue == "bad" {
			return errors.New("queue: bad is not a queue")
		}
		return nil
	}
	got, err := LoadConfig(InitContext{}, "kai-scheduler", defaultQueue)
	if err != nil || got.Queue != "default" {
		t.Fatalf("empty config: got %+v, %v; want the validator's default", got, err)
	}
	_, err = LoadConfig(InitContext{Config: []byte(`{"queue":"bad"}`)}, "kai-scheduler", defaultQueue)
	if err == nil || err.Error() != "invalid kai-scheduler config: queue: bad is not a queue" {
		t.Fatalf("got %v, want the validator's error naming the scheduler", err)
	}
	if _, err = LoadConfig[cfg](InitContext{Config: []byte(`{"queu":"x"}`)}, "kai-scheduler", nil); err == nil {
		t.Fatal("a misspelt field must fail decoding")
	}
}
