package v1alpha1

import (
	"reflect"
	"testing"
)

func TestSliceSizes(t *testing.T) {
	ptr := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name     string
		c        SliceConstraint
		replicas int32
		want     []int32
	}{
		{"maxSize 32/16 is 16+16, never 18+14", SliceConstraint{MaxSize: ptr(16)}, 32, []int32{16, 16}},
		{"maxSize 33/16 is three balanced slices", SliceConstraint{MaxSize: ptr(16)}, 33, []int32{11, 11, 11}},
		{"maxSize 24/16 is 12+12", SliceConstraint{MaxSize: ptr(16)}, 24, []int32{12, 12}},
		{"maxSize 48/16 is 16x3", SliceConstraint{MaxSize: ptr(16)}, 48, []int32{16, 16, 16}},
		{"maxSize 35/16: larger slices first", SliceConstraint{MaxSize: ptr(16)}, 35, []int32{12, 12, 11}},
		{"maxSize above replicas is one slice", SliceConstraint{MaxSize: ptr(16)}, 5, []int32{5}},
		{"size 34/16: the last slice holds the remainder", SliceConstraint{Size: ptr(16)}, 34, []int32{16, 16, 2}},
		{"size divides", SliceConstraint{Size: ptr(8)}, 24, []int32{8, 8, 8}},
		{"no pods", SliceConstraint{Size: ptr(8)}, 0, nil},
		{"no size", SliceConstraint{}, 8, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.SliceSizes(tc.replicas); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("SliceSizes(%d) = %v, want %v", tc.replicas, got, tc.want)
			}
		})
	}
}

func TestSliceOf(t *testing.T) {
	sizes := []int32{12, 12, 11}
	for _, tc := range []struct {
		index, want int
		ok          bool
	}{{0, 0, true}, {11, 0, true}, {12, 1, true}, {23, 1, true}, {24, 2, true}, {34, 2, true}, {35, 0, false}, {-1, 0, false}} {
		if got, ok := SliceOf(sizes, tc.index); got != tc.want || ok != tc.ok {
			t.Errorf("SliceOf(%v, %d) = %d, %v; want %d, %v", sizes, tc.index, got, ok, tc.want, tc.ok)
		}
	}
}
