package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// adminTopUpCommands are `tollgate admin topups ...`: card top-ups
// (/admin/v1/topups), listed and reconciled with the payment processor.
func adminTopUpCommands() []*cli.Command {
	return []*cli.Command{{
		Name:    "topups",
		Aliases: []string{"topup"},
		Usage:   "list card top-ups and reconcile them with the payment processor",
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "list top-ups, newest first", ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "account", Usage: "one account's"},
					&cli.StringFlag{Name: "status", Usage: "pending, paid, failed, expired or refunded (comma-separated)"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many"},
				},
				Action: adminTopUpList,
			},
			{Name: "get", Usage: "show a top-up", ArgsUsage: "ORDER_ID", Action: adminTopUpGet},
			{
				Name:      "reconcile",
				Usage:     "ask the processor how each open top-up stands and apply it: a payment whose event was lost is credited, once",
				ArgsUsage: "[ORDER_ID]",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "since", Value: 7 * 24 * time.Hour, Usage: "check the pending and paid top-ups made this long ago or later"},
				},
				Action: adminTopUpReconcile,
			},
		},
	}}
}

type adminTopUp struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Credits    string     `json:"credits"`
	Price      string     `json:"price"`
	Status     string     `json:"status"`
	Awaiting   bool       `json:"awaiting"`
	Refunded   string     `json:"refunded_price"`
	Debited    string     `json:"debited"`
	SessionID  string     `json:"session_id"`
	PaymentID  string     `json:"payment_id"`
	ReceiptURL string     `json:"receipt_url"`
	Problem    string     `json:"problem"`
	CreatedAt  time.Time  `json:"created_at"`
	PaidAt     *time.Time `json:"paid_at"`
}

func (o adminTopUp) state() string {
	s := o.Status
	if o.Awaiting {
		s += " (payment on its way)"
	}
	if o.Refunded != "" {
		s += ", " + o.Refunded + " refunded"
	}
	return s
}

func adminTopUpList(c *cli.Context) error {
	q := url.Values{"limit": {fmt.Sprint(c.Int("limit"))}}
	if a := c.String("account"); a != "" {
		q.Set("account_id", a)
	}
	if s := c.String("status"); s != "" {
		q.Set("status", s)
	}
	var list struct{ Data []adminTopUp }
	return adminCall(c, http.MethodGet, "/topups?"+q.Encode(), nil, &list, func(w io.Writer) {
		if len(list.Data) == 0 {
			fmt.Fprintln(w, "no top-ups")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tACCOUNT\tCREDITS\tPRICE\tSTATE\tCREATED\tPROBLEM")
		for _, o := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.ID, o.AccountID, o.Credits, o.Price, o.state(), adminStamp(o.CreatedAt), o.Problem)
		}
		_ = tw.Flush()
	})
}

func adminTopUpGet(c *cli.Context) error {
	c, id, err := adminWithID(c, "ORDER_ID")
	if err != nil {
		return err
	}
	var o adminTopUp
	return adminCall(c, http.MethodGet, "/topups/"+url.PathEscape(id), nil, &o, func(w io.Writer) {
		paid := "—"
		if o.PaidAt != nil {
			paid = adminStamp(*o.PaidAt)
		}
		adminLines(w, "id", o.ID, "account_id", o.AccountID, "credits", o.Credits, "price", o.Price, "state", o.state(),
			"debited", o.Debited, "session", o.SessionID, "payment", o.PaymentID, "receipt", o.ReceiptURL,
			"created", adminStamp(o.CreatedAt), "paid", paid, "problem", o.Problem)
	})
}

func adminTopUpReconcile(c *cli.Context) error {
	body := map[string]any{"since": time.Now().Add(-c.Duration("since")).UTC().Format(time.RFC3339)}
	if c.Args().Len() > 0 {
		body = map[string]any{"order_id": c.Args().First()}
	}
	var res struct {
		Data []struct {
			OrderID  string `json:"order_id"`
			Before   string `json:"before"`
			After    string `json:"after"`
			Error    string `json:"error"`
			Outcomes []struct {
				Result, Reason string
				Moved          string `json:"moved"`
			} `json:"outcomes"`
		}
	}
	return adminCall(c, http.MethodPost, "/topups/reconcile", body, &res, func(w io.Writer) {
		if len(res.Data) == 0 {
			fmt.Fprintln(w, "no open top-ups to check")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tBEFORE\tAFTER\tWHAT HAPPENED")
		for _, r := range res.Data {
			what := []string{}
			for _, o := range r.Outcomes {
				s := o.Result
				if o.Moved != "" && o.Moved != "0" {
					s += " " + o.Moved
				}
				if o.Reason != "" {
					s += " (" + o.Reason + ")"
				}
				what = append(what, s)
			}
			if r.Error != "" {
				what = append(what, "error: "+r.Error)
			}
			if len(what) == 0 {
				what = append(what, "still waiting at the processor")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.OrderID, r.Before, r.After, strings.Join(what, "; "))
		}
		_ = tw.Flush()
	})
}
