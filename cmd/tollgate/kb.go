package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/kb"
)

// kbCommand is `tollgate kb ...`: knowledge bases through the admin API.
func kbCommand() *cli.Command {
	cmd := &cli.Command{
		Name:  "kb",
		Usage: "import and list knowledge bases through the admin API",
		// The admin commands' flags, anywhere on the line (--json prints
		// a JSON summary).
		Flags: adminGlobalFlags(true),
		Subcommands: []*cli.Command{
			{
				Name:  "import",
				Usage: "create or update a base's pages from a folder of Markdown files",
				Description: "Each *.md file is a page whose id is its file name. YAML front matter may set title, summary,\n" +
					"tags, aliases, confidence, needs_review and source; [[wiki links]] in the body link pages by id,\n" +
					"title or alias. Source files found beside the pages are uploaded. Pages already in the base\n" +
					"are updated in place; pages not in the folder are left alone.",
				ArgsUsage: "DIR (flags may come before or after it)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "kb", Usage: "the base's id (required)"},
					&cli.StringFlag{Name: "readers", Usage: `account ids that may read the base, comma-separated, or "*" for every account`},
					&cli.StringFlag{Name: "name", Usage: "the base's name"},
				},
				Action: kbImport,
			},
			{Name: "list", Usage: "list the bases", ArgsUsage: " ", Action: kbList},
		},
	}
	addGlobalFlags(cmd.Subcommands)
	return cmd
}

// kbAPIError is a failed admin call, with the API's message.
type kbAPIError struct {
	status int
	msg    string
}

func (e *kbAPIError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

// kbCall sends one admin request with a body of the given type and decodes
// a 2xx JSON answer into out.
func kbCall(c *cli.Context, method, p string, body io.Reader, contentType string, out any) error {
	base, token, err := adminEndpoint(c)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(c.Context, method, base+p, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("admin API at %s: reading the answer: %w", base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e adminAPIError
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &kbAPIError{status: resp.StatusCode, msg: msg}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("admin API answered %s %s with unreadable JSON: %w", method, p, err)
		}
	}
	return nil
}

func kbJSON(c *cli.Context, method, p string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return kbCall(c, method, p, bytes.NewReader(b), "application/json", out)
}

// kbPageBatch caps one write: pages and bytes of JSON.
const (
	kbPageBatch  = 500
	kbBatchBytes = 16 << 20
)

type kbImportSummary struct {
	KB            string   `json:"kb_id"`
	Pages         int      `json:"pages"`
	Created       int      `json:"created"`
	Updated       int      `json:"updated"`
	Unchanged     int      `json:"unchanged"`
	Sources       int      `json:"sources"`
	OutsideLinks  int      `json:"links_outside_folder"`
	Unresolved    []kbLink `json:"unresolved_links"`
	BaseCreated   bool     `json:"base_created"`
	Warnings      []string `json:"warnings"`
	ReadersNotSet bool     `json:"-"`
}

// kbLink is a link of a page that names no page of the folder.
type kbLink struct {
	Page   string `json:"page"`
	Target string `json:"target"`
}

// kbProgressAt is the size of a folder whose import says how far it got
// as it goes (pages as each batch is written, source files every so many).
const kbProgressAt = kbPageBatch

// kbListLinks is how many unresolved links the summary names one by one.
const kbListLinks = 20

func kbImport(c *cli.Context) error {
	if c.NArg() == 0 {
		return fmt.Errorf("kb import: give the folder to import: %s kb import --kb ID [--readers A,B] DIR", self(c))
	}
	c, dir, err := positional(c, "folder")
	if err != nil {
		return err
	}
	id := strings.TrimSpace(c.String("kb"))
	if id == "" {
		return errors.New("kb import: --kb is required")
	}
	if err := kb.CheckKBID(id); err != nil {
		return fmt.Errorf("kb import: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("kb import: %s is not a folder", dir)
	}
	// Rooted at the folder: a symbolic link out of it is not followed.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("kb import: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	folder, err := kb.LoadFolder(fsys)
	if err != nil {
		return fmt.Errorf("kb import: %w", err)
	}
	progress := func(format string, args ...any) {
		if len(folder.Pages)+len(folder.Sources) > kbProgressAt {
			fmt.Fprintf(c.App.ErrWriter, "kb import: "+format+"\n", args...)
		}
	}
	progress("read %s and %s from %s", english.Count(len(folder.Pages), "page"), english.Count(len(folder.Sources), "source file"), dir)
	sum := kbImportSummary{KB: id, Pages: len(folder.Pages), Warnings: folder.Warnings, Unresolved: outsideLinks(folder.Pages)}
	sum.OutsideLinks = len(sum.Unresolved)
	if sum.Warnings == nil {
		sum.Warnings = []string{}
	}
	esc := url.PathEscape(id)

	// The base: created when missing; its name and readers change only
	// when a flag says so.
	spec := map[string]any{}
	if c.IsSet("name") {
		spec["name"] = c.String("name")
	}
	if c.IsSet("readers") {
		readers := []string{}
		for _, r := range strings.Split(c.String("readers"), ",") {
			if r = strings.TrimSpace(r); r != "" {
				readers = append(readers, r)
			}
		}
		spec["readers"] = readers
	}
	err = kbCall(c, http.MethodGet, "/kbs/"+esc, nil, "", nil)
	var ae *kbAPIError
	switch {
	case errors.As(err, &ae) && ae.status == http.StatusNotFound:
		sum.BaseCreated = true
		sum.ReadersNotSet = spec["readers"] == nil
	case err != nil:
		return fmt.Errorf("kb import: %w", err)
	}
	if sum.BaseCreated || len(spec) > 0 {
		if err := kbJSON(c, http.MethodPut, "/kbs/"+esc, spec, nil); err != nil {
			return fmt.Errorf("kb import: base %s: %w", id, err)
		}
	}

	// Sources first, so a page never names a file not yet there.
	for i, sf := range folder.Sources {
		f, err := fsys.Open(sf.Path)
		if err != nil {
			return fmt.Errorf("kb import: %w", err)
		}
		segs := strings.Split(sf.Key, "/")
		for i := range segs {
			segs[i] = url.PathEscape(segs[i])
		}
		p := "/kbs/" + esc + "/sources/" + strings.Join(segs, "/") + "?filename=" + url.QueryEscape(sf.Filename)
		err = kbCall(c, http.MethodPut, p, f, kbContentType(sf.Path), nil)
		f.Close()
		if err != nil {
			return fmt.Errorf("kb import: source %s: %w", sf.Path, err)
		}
		sum.Sources++
		if n := i + 1; n%100 == 0 || n == len(folder.Sources) {
			progress("uploaded %d of %s", n, english.Count(len(folder.Sources), "source file"))
		}
	}

	// Pages, in batches.
	for rest := folder.Pages; len(rest) > 0; {
		n, size := 0, 0
		for n < len(rest) && n < kbPageBatch {
			b, _ := json.Marshal(rest[n])
			if n > 0 && size+len(b) > kbBatchBytes {
				break
			}
			size += len(b)
			n++
		}
		var res struct{ Created, Updated, Unchanged int }
		if err := kbJSON(c, http.MethodPost, "/kbs/"+esc+"/pages", map[string]any{"pages": rest[:n]}, &res); err != nil {
			return fmt.Errorf("kb import: pages: %w", err)
		}
		sum.Created += res.Created
		sum.Updated += res.Updated
		sum.Unchanged += res.Unchanged
		rest = rest[n:]
		progress("wrote %d of %s", len(folder.Pages)-len(rest), english.Count(len(folder.Pages), "page"))
	}

	w := c.App.Writer
	if globalJSON(c) {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	for _, warn := range sum.Warnings {
		fmt.Fprintln(c.App.ErrWriter, "warning:", warn)
	}
	if sum.BaseCreated {
		fmt.Fprintf(w, "created knowledge base %s\n", id)
	}
	if sum.ReadersNotSet {
		fmt.Fprintf(c.App.ErrWriter, "warning: no account can read %s yet; set readers with --readers ACCOUNT_ID,... or --readers '*'\n", id)
	}
	fmt.Fprintf(w, "imported %s into %s: %d created, %d updated, %d unchanged; %s uploaded\n",
		english.Count(sum.Pages, "page"), id, sum.Created, sum.Updated, sum.Unchanged, english.Count(sum.Sources, "source file"))
	if n := sum.OutsideLinks; n > 0 {
		fmt.Fprintf(w, "%s no page of this folder (kept, and unresolved until the base has such a page):\n",
			english.Count(n, "link names", "links name"))
		for _, l := range sum.Unresolved[:min(n, kbListLinks)] {
			fmt.Fprintf(w, "  %s -> %s\n", l.Page, l.Target)
		}
		if n > kbListLinks {
			fmt.Fprintf(w, "  and %d more (--json lists them all)\n", n-kbListLinks)
		}
	}
	return nil
}

// outsideLinks are the links that name no page of the folder by id,
// title or alias (the base may still have such a page), in page order.
func outsideLinks(pages []kb.PageInput) []kbLink {
	fold := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	names := map[string]bool{}
	for _, p := range pages {
		names[fold(p.ID)], names[fold(p.Title)] = true, true
		for _, a := range p.Aliases {
			names[fold(a)] = true
		}
	}
	out := []kbLink{}
	for _, p := range pages {
		for _, l := range p.Links {
			if !names[fold(l)] {
				out = append(out, kbLink{Page: p.ID, Target: l})
			}
		}
	}
	return out
}

func kbContentType(p string) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func kbList(c *cli.Context) error {
	var list struct {
		Data []struct {
			ID        string    `json:"id"`
			Name      string    `json:"name"`
			Readers   []string  `json:"readers"`
			PageCount int       `json:"page_count"`
			UpdatedAt time.Time `json:"updated_at"`
		} `json:"data"`
	}
	if err := kbCall(c, http.MethodGet, "/kbs", nil, "", &list); err != nil {
		return fmt.Errorf("kb list: %w", err)
	}
	if globalJSON(c) {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(list.Data)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPAGES\tREADERS\tUPDATED")
	for _, k := range list.Data {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", k.ID, k.Name, k.PageCount, strings.Join(k.Readers, ","), adminStamp(k.UpdatedAt))
	}
	return tw.Flush()
}
