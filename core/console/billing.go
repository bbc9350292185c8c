package console

import (
	"net/http"
	"slices"

	"github.com/tollgate-gw/tollgate/store"
)

// The billing page ({billing_url}, owners only): the wallet and the
// account's money history (the sign-up credit, credits and corrections).
// A card top-up adds its form and its orders here.

type billingData struct {
	Wallet store.Wallet
	Ledger []store.LedgerEntry
}

func (c *Console) billingPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	ctx := r.Context()
	wal, err := c.o.Store.GetWallet(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	led, err := c.o.Store.ListLedger(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	slices.Reverse(led)
	return c.render(w, v, http.StatusOK, "billing", "", view{Section: "billing", Title: "Billing",
		Data: billingData{Wallet: wal, Ledger: led}})
}
