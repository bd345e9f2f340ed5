package plan

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Shape is the request sent at every step of a configuration.
type Shape struct {
	Name        string
	Method      string
	ContentType string // empty when there is no body
	Body        []byte // nil for GET
	Bytes       int    // len(Body)
	// Fields is the number of leaf values in the JSON body: what Coraza turns
	// into ARGS (json.items.0.sku ...). Coraza also records one length entry
	// per array, which this count leaves out.
	Fields int
	// Members are a mix's shapes, sent together in proportion to their
	// weights (see MixPrefix); nil for a plain shape. A mix's Bytes and
	// Fields are its members' weighted means, and it has no Method or Body
	// of its own.
	Members []Member
}

// bodySpec sizes one JSON shape: items line items, padded to about bytes.
type bodySpec struct {
	bytes, items int
}

// The item counts give ~20 / ~190 / ~900 leaves, keeping the 50 KB body under
// the 1,000 ARGS that the Coraza recommended configuration rejects (id 200007).
var jsonShapes = map[string]bodySpec{
	ShapeJSON1K:  {bytes: 1024, items: 1},
	ShapeJSON10K: {bytes: 10240, items: 18},
	ShapeJSON50K: {bytes: 51200, items: 89},
}

// ShapeByName builds the request of a shape. Bodies are generated
// deterministically, so every run and every flavor sends identical bytes.
func ShapeByName(name string) (Shape, error) {
	if IsMix(name) {
		return mixShape(name)
	}
	if name == ShapeGet {
		return Shape{Name: name, Method: http.MethodGet}, nil
	}
	spec, ok := jsonShapes[name]
	if !ok {
		return Shape{}, fmt.Errorf("unknown shape %q: use one of %s", name, oneOf(Shapes()))
	}
	body, err := orderBody(spec)
	if err != nil {
		return Shape{}, fmt.Errorf("build body of shape %q: %w", name, err)
	}
	return Shape{
		Name:        name,
		Method:      http.MethodPost,
		ContentType: jsonMediaType,
		Body:        body,
		Bytes:       len(body),
		Fields:      spec.items*itemLeaves + orderLeaves,
	}, nil
}

// The body is an order submitted to a shop API. Every value is plain text
// (letters, digits, spaces, dashes, dots, colons) so that it passes the OWASP
// CRS at paranoia level 1: the sweep measures the cost of inspecting benign
// traffic, and a false positive would turn into a 403 and a failed step.
// Checked against CRS 4.25 in Coraza 3.8: no rule matches at paranoia 1 to 3.
// At paranoia 4 any realistic body is flagged (920273 allows no spaces,
// 942432 counts the dashes and colons of timestamps), so full-crs-pl4 steps
// measure the blocking path unless the tier adds exclusions.
type order struct {
	OrderID  string   `json:"orderId"`
	PlacedAt string   `json:"placedAt"`
	Currency string   `json:"currency"`
	Customer customer `json:"customer"`
	Shipping address  `json:"shippingAddress"`
	Express  bool     `json:"express"`
	Note     string   `json:"note"`
	Items    []item   `json:"items"`
}

type customer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type address struct {
	Street     string `json:"street"`
	City       string `json:"city"`
	PostalCode string `json:"postalCode"`
	Country    string `json:"country"`
}

type item struct {
	LineID     string    `json:"lineId"`
	SKU        string    `json:"sku"`
	Name       string    `json:"name"`
	Details    string    `json:"details"`
	Quantity   int       `json:"quantity"`
	UnitPrice  float64   `json:"unitPrice"`
	InStock    bool      `json:"inStock"`
	Warehouse  warehouse `json:"warehouse"`
	ReservedAt string    `json:"reservedAt"`
}

type warehouse struct {
	Code string `json:"code"`
	Bin  string `json:"bin"`
}

// Leaf counts of the structs above; a test checks them with a JSON walk.
const (
	orderLeaves = 11
	itemLeaves  = 10
)

var (
	productNames = []string{
		"Trail Running Shoe", "Merino Hiking Sock", "Insulated Water Bottle", "Trekking Pole Pair",
		"Rain Shell Jacket", "Daypack 24 L", "Headlamp 400 Lumen", "Camp Mug Steel",
	}
	colors     = []string{"BLU", "RED", "GRN", "BLK", "GRY"}
	warehouses = []string{"WH-BER-02", "WH-HAM-01", "WH-MUC-03"}
	// Product copy; short function words that are also SQL operators are
	// avoided on purpose (libinjection looks at token sequences).
	sentences = []string{
		"Lightweight breathable mesh upper with cushioned midsole.",
		"Durable rubber outsole with deep lugs gives grip on wet trails.",
		"Recycled polyester lining keeps feet dry during long runs.",
		"Reinforced toe cap protects against loose rocks.",
		"Padded collar with firm heel counter gives stable support.",
		"Water resistant coating repels light rain.",
		"Machine washable at thirty degrees.",
		"Ships within two business days.",
		"Reflective details improve visibility at dusk.",
		"Removable insole fits custom orthotics.",
	}
)

// noteBytes is the order note's share of the free text before top-up.
const noteBytes = 80

var baseTime = time.Date(2024, time.March, 1, 10, 15, 0, 0, time.UTC)

// orderBody builds the order with a short note and empty item details, spreads
// the bytes still missing over the item details, then tops the note up,
// so the body lands within a few bytes below spec.bytes.
func orderBody(spec bodySpec) ([]byte, error) {
	o := newOrder(spec.items)
	o.Note = prose(spec.items, noteBytes)
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	perItem := (spec.bytes - len(b)) / spec.items
	for i := range o.Items {
		o.Items[i].Details = prose(i, perItem)
	}
	if b, err = json.Marshal(o); err != nil {
		return nil, err
	}
	o.Note = prose(spec.items, len(o.Note)+spec.bytes-len(b))
	return json.Marshal(o)
}

func newOrder(items int) order {
	o := order{
		OrderID:  "ord-2024-000731",
		PlacedAt: baseTime.Format(time.RFC3339),
		Currency: "EUR",
		Customer: customer{ID: "cus-00042", Name: "Alex Moreau"},
		Shipping: address{Street: "Lindenstrasse 12", City: "Berlin", PostalCode: "10969", Country: "DE"},
		Express:  true,
		Items:    make([]item, items),
	}
	for i := range o.Items {
		o.Items[i] = newItem(i)
	}
	return o
}

// newItem derives every value from the index, so bodies are reproducible
// without a random generator.
func newItem(i int) item {
	color := colors[i%len(colors)]
	return item{
		LineID:    fmt.Sprintf("ln-%04d", i+1),
		SKU:       fmt.Sprintf("SKU-%05d-%s", 10000+(i*7919)%90000, color),
		Name:      productNames[i%len(productNames)],
		Quantity:  1 + i%4,
		UnitPrice: float64(995+(i*737)%12000) / 100,
		InStock:   i%5 != 3,
		Warehouse: warehouse{
			Code: warehouses[i%len(warehouses)],
			Bin:  fmt.Sprintf("B%02d-%02d-%02d", 1+i%20, 1+i%7, 1+i%11),
		},
		ReservedAt: baseTime.Add(time.Duration(i*97) * time.Second).Format(time.RFC3339),
	}
}

// prose returns whole words of product copy, starting at a sentence chosen
// by seed, at most maxLen bytes long.
func prose(seed, maxLen int) string {
	var sb strings.Builder
	for k := 0; ; k++ {
		for _, word := range strings.Fields(sentences[(seed+k)%len(sentences)]) {
			extra := len(word)
			if sb.Len() > 0 {
				extra++
			}
			if sb.Len()+extra > maxLen {
				return sb.String()
			}
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(word)
		}
	}
}
