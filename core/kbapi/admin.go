package kbapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/jsonw"
	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
)

// AdminRoute is a route of the admin API (/admin/v1, behind the admin
// token), as a ServeMux pattern.
type AdminRoute struct {
	Pattern string
	Handler http.HandlerFunc
}

// MaxPagesBody caps the body of one page write.
const MaxPagesBody = 64 << 20

// AdminRoutes are the operator's knowledge-base routes (PRODUCT.md §2
// Knowledge bases), plus reads for the console.
func (a *API) AdminRoutes() []AdminRoute {
	const p = "/admin/v1/kbs"
	return []AdminRoute{
		{"GET " + p, a.adminList},
		{"GET " + p + "/{kb_id}", a.adminGet},
		{"PUT " + p + "/{kb_id}", a.adminPut},
		{"DELETE " + p + "/{kb_id}", a.adminDelete},
		{"GET " + p + "/{kb_id}/pages", a.adminPages},
		{"POST " + p + "/{kb_id}/pages", a.adminPutPages},
		{"DELETE " + p + "/{kb_id}/pages/{id}", a.adminDeletePage},
		{"PUT " + p + "/{kb_id}/sources/{r2_key...}", a.adminPutSource},
	}
}

func adminFail(w http.ResponseWriter, err error) {
	apierr.Write(w, protocol.OpenAIChat, apiError(err))
}

func adminReply(w http.ResponseWriter, status int, v any) {
	jsonw.Write(w, status, v)
}

// decodeStrict reads a JSON body, refusing unknown fields.
func decodeStrict(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			e := apierr.Newf(apierr.InvalidRequest, "request body is larger than %d MB: send fewer pages at once", limit>>20)
			e.Status = http.StatusRequestEntityTooLarge
			return e
		}
		return apierr.Newf(apierr.InvalidRequest, "invalid JSON body: %v", err)
	}
	return nil
}

type adminKB struct {
	Object    string    `json:"object"`
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Readers   []string  `json:"readers"`
	PageCount int       `json:"page_count"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func adminKBOf(k store.KnowledgeBase) adminKB {
	return adminKB{Object: "knowledge_base", ID: k.ID, Name: k.Name, Readers: nonNil(k.Readers), PageCount: k.PageCount,
		CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt}
}

func (a *API) adminList(w http.ResponseWriter, r *http.Request) {
	kbs, err := a.svc.Bases(r.Context())
	if err != nil {
		adminFail(w, err)
		return
	}
	out := make([]adminKB, len(kbs))
	for i, k := range kbs {
		out[i] = adminKBOf(k)
	}
	adminReply(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

func (a *API) adminGet(w http.ResponseWriter, r *http.Request) {
	k, err := a.svc.Base(r.Context(), r.PathValue("kb_id"))
	if err != nil {
		adminFail(w, err)
		return
	}
	adminReply(w, http.StatusOK, adminKBOf(k))
}

// adminPut creates or updates a base; a field left out keeps its value
// (on a new base: the id as name, no reader).
func (a *API) adminPut(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name    *string   `json:"name"`
		Readers *[]string `json:"readers"`
	}
	if err := decodeStrict(w, r, 1<<20, &body); err != nil {
		adminFail(w, err)
		return
	}
	k, created, err := a.svc.PutBase(r.Context(), r.PathValue("kb_id"), kb.BaseSpec{Name: body.Name, Readers: body.Readers})
	if err != nil {
		adminFail(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	adminReply(w, status, adminKBOf(k))
}

func (a *API) adminDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("kb_id")
	if err := a.svc.DeleteBase(r.Context(), id); err != nil {
		adminFail(w, err)
		return
	}
	adminReply(w, http.StatusOK, map[string]any{"id": id, "object": "knowledge_base", "deleted": true})
}

// adminPages lists a base's pages by id, without bodies: ?after=ID&limit=N
// (default 100, at most 1000).
func (a *API) adminPages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("kb_id")
	if _, err := a.svc.Base(r.Context(), id); err != nil {
		adminFail(w, err)
		return
	}
	limit, err := intParam(r, "limit", 100, 1, 1000, false)
	if err != nil {
		adminFail(w, err)
		return
	}
	ps, err := a.svc.ListPages(r.Context(), id, r.URL.Query().Get("after"), limit+1)
	if err != nil {
		adminFail(w, err)
		return
	}
	more := len(ps) > limit
	if more {
		ps = ps[:limit]
	}
	adminReply(w, http.StatusOK, map[string]any{"object": "list", "data": entries(ps), "has_more": more})
}

// adminPutPages upserts pages: {pages: [...]}.
func (a *API) adminPutPages(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Pages *[]kb.PageInput `json:"pages"`
	}
	if err := decodeStrict(w, r, MaxPagesBody, &body); err != nil {
		adminFail(w, err)
		return
	}
	if body.Pages == nil {
		adminFail(w, apierr.New(apierr.InvalidRequest, "pages is required: a list of pages"))
		return
	}
	id := r.PathValue("kb_id")
	res, err := a.svc.PutPages(r.Context(), id, *body.Pages)
	if err != nil {
		adminFail(w, err)
		return
	}
	adminReply(w, http.StatusOK, map[string]any{
		"object": "knowledge_pages.write", "kb_id": id,
		"created": res.Created, "updated": res.Updated, "unchanged": res.Unchanged,
	})
}

func (a *API) adminDeletePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.svc.DeletePage(r.Context(), r.PathValue("kb_id"), id); err != nil {
		adminFail(w, err)
		return
	}
	adminReply(w, http.StatusOK, map[string]any{"id": id, "object": "knowledge_page", "deleted": true})
}

// adminPutSource stores the body's bytes as a source file. Its type is
// the request's Content-Type (sniffed when absent); ?filename= names the
// download (default: the key's last part).
func (a *API) adminPutSource(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	if ct == "application/x-www-form-urlencoded" {
		ct = "" // curl --data-binary's default says nothing of the file
	}
	src, err := a.svc.PutSource(r.Context(), r.PathValue("kb_id"), r.PathValue("r2_key"),
		strings.TrimSpace(r.URL.Query().Get("filename")), ct, io.Reader(r.Body))
	if err != nil {
		adminFail(w, err)
		return
	}
	adminReply(w, http.StatusOK, map[string]any{
		"object": "knowledge_source", "kb_id": src.KBID, "r2_key": src.Key, "filename": src.Filename,
		"content_type": src.ContentType, "size": src.Size, "file_id": src.FileID,
	})
}
