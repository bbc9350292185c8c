package billing

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

// AdminRoutes are the operator's routes for top-ups (`tollgate admin
// topups`): list them, show one, reconcile them with the processor.
func (s *Service) AdminRoutes() []admin.Route {
	return []admin.Route{
		{Pattern: "GET /admin/v1/topups", Handler: s.adminList},
		{Pattern: "GET /admin/v1/topups/{id}", Handler: s.adminGet},
		{Pattern: "POST /admin/v1/topups/reconcile", Handler: s.adminReconcile},
	}
}

// orderView is an order's JSON: money as decimal strings, the price in
// both its smallest unit and as a decimal.
type orderView struct {
	store.Order
	Object     string `json:"object"`
	Credits    string `json:"credits"`
	Debited    string `json:"debited"`
	Price      string `json:"price"`
	RefundedAs string `json:"refunded_price,omitempty"`
}

// View is an order as the admin API and the CLI show it.
func View(o store.Order) any {
	v := orderView{Order: o, Object: "topup", Credits: o.Credits.String(), Debited: o.Debited.String(),
		Price: FormatAmount(o.Amount, o.Currency)}
	if o.Refunded > 0 {
		v.RefundedAs = FormatAmount(o.Refunded, o.Currency)
	}
	return v
}

func (s *Service) adminList(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	q := store.OrderQuery{AccountID: qs.Get("account_id")}
	if st := qs.Get("status"); st != "" {
		for _, one := range strings.Split(st, ",") {
			if !slices.Contains(store.OrderStatuses, one) {
				admin.Fail(w, apierr.New(apierr.InvalidRequest, "status: "+strconv.Quote(one)+" is not one of "+strings.Join(store.OrderStatuses, ", ")))
				return
			}
			q.Statuses = append(q.Statuses, one)
		}
	}
	if l := qs.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.OrderListLimit {
			admin.Fail(w, apierr.New(apierr.InvalidRequest, "limit: want 1 to "+strconv.Itoa(store.OrderListLimit)))
			return
		}
		q.Limit = n
	} else {
		q.Limit = 100
	}
	if since := qs.Get("since"); since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			admin.Fail(w, apierr.New(apierr.InvalidRequest, "since: want an RFC 3339 time"))
			return
		}
		q.Since = t
	}
	orders, err := s.st.ListOrders(r.Context(), q)
	if err != nil {
		admin.Fail(w, err)
		return
	}
	out := make([]any, 0, len(orders))
	for _, o := range orders {
		out = append(out, View(o))
	}
	admin.Reply(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

func (s *Service) adminGet(w http.ResponseWriter, r *http.Request) {
	o, err := s.st.GetOrder(r.Context(), r.PathValue("id"))
	if err != nil {
		admin.Fail(w, err)
		return
	}
	admin.Reply(w, http.StatusOK, View(o))
}

func (s *Service) adminReconcile(w http.ResponseWriter, r *http.Request) {
	var body struct {
		OrderID string     `json:"order_id"`
		Since   *time.Time `json:"since"`
	}
	if r.ContentLength != 0 {
		if err := admin.Decode(r, &body); err != nil {
			admin.Fail(w, err)
			return
		}
	}
	q := ReconcileQuery{OrderID: body.OrderID}
	if body.Since != nil {
		q.Since = *body.Since
	}
	res, err := s.Reconcile(r.Context(), q)
	if err != nil {
		admin.Fail(w, err)
		return
	}
	admin.Reply(w, http.StatusOK, map[string]any{"object": "list", "data": res})
}
