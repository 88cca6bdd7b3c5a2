package sym

import "testing"

func TestQuo(t *testing.T) {
	for _, tc := range []struct {
		e, d string
		want string // "" when d does not divide e exactly
	}{
		{"64*batch", "batch", "64"},
		{"64*batch*seq", "batch*seq", "64"},
		{"64*batch*seq", "4*seq", "16*batch"},
		{"6*seq + 12", "3", "2*seq+4"},
		{"seq*seq", "seq", "seq"},
		{"24", "6", "4"},
		{"3*seq", "2*seq", ""},
		{"3*seq", "2", ""},
		{"seq + 1", "seq", ""},
		{"batch*seq", "tok", ""},
		{"seq", "seq + 1", ""},
		{"seq/2", "seq", ""},
		{"seq", "0", ""},
		{"0", "seq", "0"},
	} {
		e, err := Parse(tc.e)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := Quo(e, d)
		got := ""
		if ok {
			got = q.String()
		}
		if got != tc.want {
			t.Errorf("Quo(%s, %s) = %q, %v; want %q", tc.e, tc.d, got, ok, tc.want)
		}
	}
}
