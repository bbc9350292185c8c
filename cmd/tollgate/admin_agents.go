package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// adminAgentCommands are `tollgate admin agent ...` and `tollgate admin
// key-request ...`: an organization's agents, their keys, and the
// employees' requests for keys (PRODUCT.md §2).
func adminAgentCommands() []*cli.Command {
	agentFlags := []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "agent name"},
		&cli.StringFlag{Name: "model", Usage: "the model every call is locked to"},
		&cli.StringFlag{Name: "system-prompt", Usage: "the system prompt, first and binding in every call"},
		&cli.StringFlag{Name: "system-prompt-file", Usage: "read the system prompt from a file (- for stdin)"},
		&cli.StringFlag{Name: "temperature", Usage: `temperature from 0 to 2 used unless the client sets one, or "none"`},
		&cli.StringFlag{Name: "knowledge-bases", Usage: `comma-separated kb ids searched once per call ("" for none)`},
		&cli.BoolFlag{Name: "web-search", Usage: "add web search on streaming calls of models that support it"},
		&cli.BoolFlag{Name: "image-generation", Usage: "add image generation on streaming calls of models that support it"},
	}
	capFlag := &cli.StringFlag{Name: "spend-cap", Usage: `what the key may spend over its life, a decimal, or "none"`}
	return []*cli.Command{
		{
			Name:    "agent",
			Aliases: []string{"agents"},
			Usage:   "create, list, update and delete an organization's agents, and issue their keys",
			Subcommands: []*cli.Command{
				{
					Name: "create", Usage: "create an agent (published unless --unpublished)", ArgsUsage: "ACCOUNT_ID",
					Flags:  append([]cli.Flag{&cli.BoolFlag{Name: "unpublished", Usage: "create it unpublished: its keys get 403 until it is published"}}, agentFlags...),
					Action: adminAgentCreate,
				},
				{Name: "list", Usage: "list an organization's agents", ArgsUsage: "ACCOUNT_ID", Action: adminAgentList},
				{Name: "get", Usage: "show an agent", ArgsUsage: "AGENT_ID", Action: adminAgentGet},
				{
					Name: "update", Usage: "change an agent; only the flags given change", ArgsUsage: "AGENT_ID",
					Flags: append([]cli.Flag{
						&cli.BoolFlag{Name: "publish", Usage: "publish the agent"},
						&cli.BoolFlag{Name: "unpublish", Usage: "unpublish the agent: its keys get 403"},
					}, agentFlags...),
					Action: adminAgentUpdate,
				},
				{Name: "delete", Usage: "delete an agent: its keys get 403", ArgsUsage: "AGENT_ID", Action: adminAgentDelete},
				{
					Name: "issue-key", Usage: "issue a key of the agent now; its raw value is printed once", ArgsUsage: "AGENT_ID",
					Flags:  []cli.Flag{&cli.StringFlag{Name: "name", Usage: "key name (required)"}, capFlag},
					Action: adminAgentIssueKey,
				},
			},
		},
		{
			Name:    "key-request",
			Aliases: []string{"key-requests"},
			Usage:   "request keys of an agent for employees, and approve or reject the requests",
			Subcommands: []*cli.Command{
				{
					Name: "create", Usage: "request a key of an agent", ArgsUsage: "AGENT_ID",
					Flags: []cli.Flag{
						&cli.StringFlag{Name: "requester", Usage: "who asks (required)"},
						&cli.StringFlag{Name: "note", Usage: "why"},
					},
					Action: adminKeyRequestCreate,
				},
				{
					Name: "list", Usage: "list an organization's key requests", ArgsUsage: "ACCOUNT_ID",
					Flags:  []cli.Flag{&cli.StringFlag{Name: "status", Usage: "only pending, approved or rejected"}},
					Action: adminKeyRequestList,
				},
				{
					Name: "approve", Usage: "approve a request: the key is issued and printed once", ArgsUsage: "REQUEST_ID",
					Flags:  []cli.Flag{capFlag},
					Action: adminKeyRequestApprove,
				},
				{Name: "reject", Usage: "reject a request", ArgsUsage: "REQUEST_ID", Action: adminKeyRequestReject},
			},
		},
	}
}

// adminAgent and adminKeyRequest mirror the admin API's JSON.
type adminAgent struct {
	ID              string     `json:"id"`
	AccountID       string     `json:"account_id"`
	Name            string     `json:"name"`
	SystemPrompt    string     `json:"system_prompt"`
	Model           string     `json:"model"`
	Temperature     *float64   `json:"temperature"`
	KnowledgeBases  []string   `json:"knowledge_bases"`
	WebSearch       bool       `json:"web_search"`
	ImageGeneration bool       `json:"image_generation"`
	Published       bool       `json:"published"`
	CreatedAt       time.Time  `json:"created_at"`
	DeletedAt       *time.Time `json:"deleted_at"`
}

type adminKeyRequest struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	AgentID   string     `json:"agent_id"`
	Requester string     `json:"requester"`
	Note      string     `json:"note"`
	Status    string     `json:"status"`
	KeyID     *string    `json:"key_id"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at"`
	Key       *adminKey  `json:"key"`
}

// adminAgentBody collects the agent fields given as flags.
func adminAgentBody(c *cli.Context) (map[string]any, error) {
	body := map[string]any{}
	for flag, field := range map[string]string{"name": "name", "model": "model", "system-prompt": "system_prompt"} {
		if c.IsSet(flag) {
			body[field] = c.String(flag)
		}
	}
	if c.IsSet("system-prompt-file") {
		if c.IsSet("system-prompt") {
			return nil, errors.New("--system-prompt and --system-prompt-file exclude each other")
		}
		var b []byte
		var err error
		if f := c.String("system-prompt-file"); f == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, fmt.Errorf("--system-prompt-file: %w", err)
		}
		body["system_prompt"] = string(b)
	}
	if c.IsSet("temperature") {
		switch v := strings.TrimSpace(c.String("temperature")); v {
		case "", "none":
			body["temperature"] = nil
		default:
			t, err := strconv.ParseFloat(v, 64)
			if err != nil || t < 0 || t > 2 {
				return nil, fmt.Errorf("--temperature: %q is not a number from 0 to 2 (or \"none\")", v)
			}
			body["temperature"] = t
		}
	}
	if c.IsSet("knowledge-bases") {
		ids := []string{}
		for _, id := range strings.Split(c.String("knowledge-bases"), ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		body["knowledge_bases"] = ids
	}
	for flag, field := range map[string]string{"web-search": "web_search", "image-generation": "image_generation"} {
		if c.IsSet(flag) {
			body[field] = c.Bool(flag)
		}
	}
	return body, nil
}

// adminSpendCap reads --spend-cap: a decimal, or "none" for no cap (null).
func adminSpendCap(v string) (any, error) {
	switch v = strings.TrimSpace(v); v {
	case "", "none":
		return nil, nil
	}
	return adminAmount("spend-cap", v)
}

// adminAgentModelWarning warns when the agent's model is not one of the
// gateway's: every call of the agent would get model_not_found.
func adminAgentModelWarning(c *cli.Context, body map[string]any) {
	m, ok := body["model"].(string)
	if !ok || m == "" {
		return
	}
	known, ok := adminModels(c)
	if !ok {
		return
	}
	for _, id := range known {
		if id == m {
			return
		}
	}
	warnf(c, "--model: %q is not a model of this gateway; the agent is saved, but its calls get model_not_found", m)
}

func adminAgentCreate(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	body, err := adminAgentBody(c)
	if err != nil {
		return err
	}
	if body["name"] == nil || body["model"] == nil {
		return errors.New("agent create: --name and --model are required")
	}
	body["published"] = !c.Bool("unpublished")
	adminAgentModelWarning(c, body)
	var a adminAgent
	return adminCall(c, http.MethodPost, "/accounts/"+id+"/agents", body, &a, func(w io.Writer) { adminPrintAgent(w, a) })
}

func adminAgentList(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	var list struct{ Data []adminAgent }
	return adminCall(c, http.MethodGet, "/accounts/"+id+"/agents", nil, &list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tMODEL\tPUBLISHED\tKNOWLEDGE BASES\tCREATED")
		for _, a := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\n", a.ID, a.Name, a.Model, a.Published, adminList(a.KnowledgeBases), adminStamp(a.CreatedAt))
		}
		_ = tw.Flush()
	})
}

func adminAgentGet(c *cli.Context) error {
	c, id, err := adminWithID(c, "AGENT_ID")
	if err != nil {
		return err
	}
	var a adminAgent
	return adminCall(c, http.MethodGet, "/agents/"+id, nil, &a, func(w io.Writer) { adminPrintAgent(w, a) })
}

func adminAgentUpdate(c *cli.Context) error {
	c, id, err := adminWithID(c, "AGENT_ID")
	if err != nil {
		return err
	}
	body, err := adminAgentBody(c)
	if err != nil {
		return err
	}
	switch {
	case c.Bool("publish") && c.Bool("unpublish"):
		return errors.New("agent update: --publish and --unpublish exclude each other")
	case c.Bool("publish"):
		body["published"] = true
	case c.Bool("unpublish"):
		body["published"] = false
	}
	if len(body) == 0 {
		return errors.New("agent update: nothing to change; give at least one flag")
	}
	adminAgentModelWarning(c, body)
	var a adminAgent
	return adminCall(c, http.MethodPatch, "/agents/"+id, body, &a, func(w io.Writer) { adminPrintAgent(w, a) })
}

func adminAgentDelete(c *cli.Context) error {
	c, id, err := adminWithID(c, "AGENT_ID")
	if err != nil {
		return err
	}
	return adminCall(c, http.MethodDelete, "/agents/"+id, nil, nil, func(w io.Writer) { fmt.Fprintf(w, "deleted agent %s\n", id) })
}

func adminAgentIssueKey(c *cli.Context) error {
	c, id, err := adminWithID(c, "AGENT_ID")
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.String("name")) == "" {
		return errors.New("agent issue-key: --name is required")
	}
	body := map[string]any{"name": c.String("name"), "spend_cap": nil}
	if c.IsSet("spend-cap") {
		if body["spend_cap"], err = adminSpendCap(c.String("spend-cap")); err != nil {
			return err
		}
	}
	var k adminKey
	return adminCall(c, http.MethodPost, "/agents/"+id+"/keys", body, &k, func(w io.Writer) {
		adminPrintKey(w, k, false)
		fmt.Fprintf(w, "\nThe raw key is shown once here; store it now (an admin can print it again with: %s admin key reveal %s).\n", self(c), k.ID)
	})
}

func adminKeyGet(c *cli.Context) error {
	c, id, err := adminWithID(c, "KEY_ID")
	if err != nil {
		return err
	}
	var k adminKey
	return adminCall(c, http.MethodGet, "/keys/"+id, nil, &k, func(w io.Writer) { adminPrintKey(w, k, true) })
}

func adminKeyRequestCreate(c *cli.Context) error {
	c, id, err := adminWithID(c, "AGENT_ID")
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.String("requester")) == "" {
		return errors.New("key-request create: --requester is required")
	}
	var r adminKeyRequest
	return adminCall(c, http.MethodPost, "/agents/"+id+"/key-requests",
		map[string]any{"requester": c.String("requester"), "note": c.String("note")}, &r,
		func(w io.Writer) { adminPrintKeyRequest(w, r) })
}

func adminKeyRequestList(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	path := "/accounts/" + id + "/key-requests"
	if s := c.String("status"); s != "" {
		path += "?status=" + s
	}
	var list struct{ Data []adminKeyRequest }
	return adminCall(c, http.MethodGet, path, nil, &list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tREQUESTER\tSTATUS\tKEY\tCREATED")
		for _, r := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.AgentID, r.Requester, r.Status, adminOr(r.KeyID, "-"), adminStamp(r.CreatedAt))
		}
		_ = tw.Flush()
	})
}

func adminKeyRequestApprove(c *cli.Context) error {
	c, id, err := adminWithID(c, "REQUEST_ID")
	if err != nil {
		return err
	}
	body := map[string]any{"spend_cap": nil}
	if c.IsSet("spend-cap") {
		if body["spend_cap"], err = adminSpendCap(c.String("spend-cap")); err != nil {
			return err
		}
	}
	var r adminKeyRequest
	return adminCall(c, http.MethodPost, "/key-requests/"+id+"/approve", body, &r, func(w io.Writer) {
		adminPrintKeyRequest(w, r)
		if r.Key != nil {
			fmt.Fprintln(w)
			adminPrintKey(w, *r.Key, false)
			fmt.Fprintf(w, "\nThe raw key is shown once here; hand it to %s now (an admin can print it again with: %s admin key reveal %s).\n", r.Requester, self(c), r.Key.ID)
		}
	})
}

func adminKeyRequestReject(c *cli.Context) error {
	c, id, err := adminWithID(c, "REQUEST_ID")
	if err != nil {
		return err
	}
	var r adminKeyRequest
	return adminCall(c, http.MethodPost, "/key-requests/"+id+"/reject", map[string]any{}, &r, func(w io.Writer) { adminPrintKeyRequest(w, r) })
}

func adminPrintAgent(w io.Writer, a adminAgent) {
	temp := "none"
	if a.Temperature != nil {
		temp = strconv.FormatFloat(*a.Temperature, 'f', -1, 64)
	}
	kv := []string{"id", a.ID, "account_id", a.AccountID, "name", a.Name, "model", a.Model, "temperature", temp,
		"knowledge_bases", adminList(a.KnowledgeBases), "web_search", fmt.Sprint(a.WebSearch),
		"image_generation", fmt.Sprint(a.ImageGeneration), "published", fmt.Sprint(a.Published),
		"created_at", adminStamp(a.CreatedAt)}
	if a.DeletedAt != nil {
		kv = append(kv, "deleted_at", adminStamp(*a.DeletedAt))
	}
	adminLines(w, append(kv, "system_prompt", adminOneLine(a.SystemPrompt))...)
}

func adminPrintKeyRequest(w io.Writer, r adminKeyRequest) {
	kv := []string{"id", r.ID, "account_id", r.AccountID, "agent_id", r.AgentID, "requester", r.Requester,
		"note", r.Note, "status", r.Status, "key_id", adminOr(r.KeyID, "-"), "created_at", adminStamp(r.CreatedAt)}
	if r.DecidedAt != nil {
		kv = append(kv, "decided_at", adminStamp(*r.DecidedAt))
	}
	adminLines(w, kv...)
}

func adminList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ",")
}

func adminOr(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

// adminOneLine shows a long text on one line, cut at 80 characters.
func adminOneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}
