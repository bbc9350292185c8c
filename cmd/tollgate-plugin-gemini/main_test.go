package main

import (
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "gemini", Protocol: "gemini_native", Model: "gemini-2.5-flash",
		Path: "/v1beta/models/gemini-2.5-flash:generateContent", AuthHeader: "X-Goog-Api-Key", AuthValue: "key-1"})
}
