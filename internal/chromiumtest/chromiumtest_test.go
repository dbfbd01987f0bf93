package chromiumtest

import (
	"maps"
	"testing"
)

func TestBodyAttrs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dom  string
		want map[string]string
	}{
		{
			name: "double-quoted values",
			dom:  `<html><head></head><body data-charts-total="10" data-charts-drawn="9"><p>x</p></body></html>`,
			want: map[string]string{"data-charts-total": "10", "data-charts-drawn": "9"},
		},
		{
			name: "single quotes, bare values, no value, entities",
			dom:  "<BODY\n class='a b' data-n=3 hidden data-js-error=\"x &amp; y\">",
			want: map[string]string{"class": "a b", "data-n": "3", "hidden": "", "data-js-error": "x & y"},
		},
		{
			name: "only the first body tag counts (a script may mention another)",
			dom:  `<body id="real"><script>// <body id="fake"></script></body>`,
			want: map[string]string{"id": "real"},
		},
		{
			name: "no attribute",
			dom:  `<body>`,
			want: map[string]string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := BodyAttrs(tc.dom)
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("BodyAttrs(%q) = %v, %v; want %v, nil", tc.dom, got, err, tc.want)
			}
		})
	}
	if _, err := BodyAttrs("<html></html>"); err == nil {
		t.Errorf("BodyAttrs(%q) error = nil; want one", "<html></html>")
	}
}
