package nginxproc

import "testing"

func TestParseStubStatus(t *testing.T) {
	for _, tc := range []struct {
		page string
		want int64
		ok   bool
	}{
		{"Active connections: 1 \nserver accepts handled requests\n 7 7 12 \nReading: 0 Writing: 1 Waiting: 0 \n", 12, true},
		{"Active connections: 1 \nserver accepts handled requests\n 7 7 \n", 0, false},
		{"<html>not found</html>", 0, false},
	} {
		got, err := parseStubStatus(tc.page)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d (ok %v)", tc.page, got, err, tc.want, tc.ok)
		}
	}
}
