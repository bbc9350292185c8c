package anthropic_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/anthropic"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func simBody(prompt string, stream bool) []byte {
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":256,"stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":` + strconv.Quote(prompt) + `}]}`)
}

func TestSim(t *testing.T) {
	vt.CheckSim(t, vt.SimCase{New: func() vendor.Vendor { return anthropic.New() }, Protocol: "anthropic_messages",
		Model: "claude-sonnet-4-5", Body: simBody})
}

func TestSimCountTokens(t *testing.T) {
	up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "k"}).Handler())
	defer up.Close()
	v := anthropic.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	resp, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "anthropic_messages",
		Model: "claude-sonnet-4-5", Body: simBody("count these words", false), Operation: vendor.OpCountTokens})
	if err != nil || resp.Status != 200 || gjson.GetBytes(resp.Body, "input_tokens").Int() <= 0 {
		t.Fatalf("got %+v %v", resp, err)
	}
}
