package billing

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
)

// Prices. A top-up is bought in credits; the processor charges its price
// in the currency's smallest unit (cents), credits / credits_per_unit,
// rounded up to that unit so no credit is sold below its price.

// maxAmount is the largest single payment Stripe takes (99,999,999 in the
// smallest unit: $999,999.99).
const maxAmount = 99_999_999

// zeroDecimal and threeDecimal are the currencies whose smallest unit is
// not a hundredth (Stripe's lists).
var (
	zeroDecimal  = " bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf "
	threeDecimal = " bhd jod kwd omr tnd "
)

// Exponent is how many decimals the currency's smallest unit has.
func Exponent(currency string) int {
	c := " " + strings.ToLower(currency) + " "
	switch {
	case strings.Contains(zeroDecimal, c):
		return 0
	case strings.Contains(threeDecimal, c):
		return 3
	}
	return 2
}

// FormatAmount writes an amount in the smallest unit as a decimal with
// its currency: 40440 usd is "404.40 USD".
func FormatAmount(amount int64, currency string) string {
	exp := Exponent(currency)
	s := fmt.Sprintf("%0*d", exp+1, amount)
	if exp > 0 {
		s = s[:len(s)-exp] + "." + s[len(s)-exp:]
	}
	return s + " " + strings.ToUpper(currency)
}

// Quote is a top-up's price.
type Quote struct {
	Credits  money.Nano
	Amount   int64
	Currency string
}

// Price is the price of credits: refused (400) below the minimum, above
// the maximum, or beyond what one payment may be.
func (s *Service) Price(credits money.Nano) (Quote, error) {
	c := s.cfg
	switch {
	case credits < c.Minimum:
		return Quote{}, apierr.New(apierr.InvalidRequest, fmt.Sprintf("the smallest top-up is %s credits; %s is below it", c.Minimum, credits))
	case c.Maximum != 0 && credits > c.Maximum:
		return Quote{}, apierr.New(apierr.InvalidRequest, fmt.Sprintf("the largest top-up is %s credits; %s is above it", c.Maximum, credits))
	}
	// ceil(credits × 10^exp / credits_per_unit), exactly.
	n := new(big.Int).Mul(big.NewInt(int64(credits)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(Exponent(c.Currency))), nil))
	d := big.NewInt(int64(c.CreditsPerUnit))
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > maxAmount {
		return Quote{}, apierr.New(apierr.InvalidRequest, fmt.Sprintf("%s credits cost more than one card payment may be (%s); top up in several payments", credits, FormatAmount(maxAmount, c.Currency)))
	}
	return Quote{Credits: credits, Amount: q.Int64(), Currency: c.Currency}, nil
}

// debitFor is what refunds of refunded (smallest unit, in all) take back
// of an order's credits: in proportion, rounded down, and all of them for
// a full refund.
func debitFor(credits money.Nano, amount, refunded int64) money.Nano {
	if refunded >= amount || amount <= 0 {
		return credits
	}
	n := new(big.Int).Mul(big.NewInt(int64(credits)), big.NewInt(refunded))
	return money.Nano(n.Quo(n, big.NewInt(amount)).Int64())
}
