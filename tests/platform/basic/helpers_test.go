//go:build platform

package basic

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type envelope = testutil.Envelope

// tenant is a signed-in tenant of a running stack.
type tenant struct{ *stack.User }

func demo(t testing.TB, s *stack.Stack) *tenant { return &tenant{s.DemoAdmin(t)} }

func addTenant(t testing.TB, s *stack.Stack, code string) *tenant {
	return &tenant{s.NewTenant(t, code)}
}

// post is a goods-management call that must succeed; it decodes data into out.
func (tn *tenant) post(t testing.TB, path, body string, out any) {
	t.Helper()
	env := tn.Expect(t, "POST", path, body, 0, "")
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s: %v in %s", path, err, env.Data)
		}
	}
}

func (tn *tenant) get(t testing.TB, path string, out any) {
	t.Helper()
	env := tn.Expect(t, "GET", path, "", 0, "")
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("%s: %v in %s", path, err, env.Data)
	}
}

// addShop inserts a shop of the tenant (shops come from platform authorization, which
// has no endpoint).
func (tn *tenant) addShop(t testing.TB, name, platform, platformShopID, status string) int64 {
	t.Helper()
	var id int64
	if err := tn.DB.Pool.QueryRow(context.Background(), `INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id, status)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, tn.Tenant, name, platform, platformShopID, status).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func (tn *tenant) addCategory(t testing.TB, parent int64, name string, level, sortOrder int) int64 {
	t.Helper()
	var id int64
	if err := tn.DB.Pool.QueryRow(context.Background(), `INSERT INTO basic.categories (tenant_id, parent_id, name, level, sort_order)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, tn.Tenant, parent, name, level, sortOrder).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// addUser adds a staff member (a tenant user) and returns its id.
func (tn *tenant) addUser(t testing.TB, username, nickname string) int64 {
	t.Helper()
	var id int64
	if err := tn.DB.Pool.QueryRow(context.Background(), `INSERT INTO tenant.users (tenant_id, username, nickname, password_hash)
		VALUES ($1, $2, $3, 'x') RETURNING id`, tn.Tenant, username, nickname).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// goods is a Goods as JSON carries it.
type goods struct {
	ID              id      `json:"id"`
	ShopID          id      `json:"shop_id"`
	ShopName        string  `json:"shop_name"`
	Platform        string  `json:"platform"`
	PlatformGoodsID string  `json:"platform_goods_id"`
	Name            string  `json:"name"`
	ItemNo          string  `json:"item_no"`
	CategoryID      id      `json:"category_id"`
	CategoryName    string  `json:"category_name"`
	StaffID         id      `json:"staff_id"`
	StaffName       string  `json:"staff_name"`
	IsVirtual       bool    `json:"is_virtual"`
	Status          string  `json:"status"`
	Price           float64 `json:"price"`
	Cost            float64 `json:"cost"`
	ImageURL        string  `json:"image_url"`
	DisplayOrder    int     `json:"display_order"`
	Skus            []struct {
		ID            id      `json:"id"`
		PlatformSkuID string  `json:"platform_sku_id"`
		Spec          string  `json:"spec"`
		Price         float64 `json:"price"`
		Stock         id      `json:"stock"`
		ItemNo        string  `json:"item_no"`
	} `json:"skus"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// id decodes an int64 sent as a JSON string (protojson) or number.
type id int64

func (i *id) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	*i = id(n)
	return err
}

type pageOf[T any] struct {
	Items    []T `json:"items"`
	Total    id  `json:"total"`
	PageNum  int `json:"page_num"`
	PageSize int `json:"page_size"`
}

func (tn *tenant) createGoods(t testing.TB, body string) goods {
	t.Helper()
	var out struct {
		Goods goods `json:"goods"`
	}
	tn.post(t, "/api/v1/basic/goods", body, &out)
	if out.Goods.ID == 0 {
		t.Fatalf("no id: %+v", out)
	}
	return out.Goods
}

func (tn *tenant) getGoods(t testing.TB, gid id) goods {
	t.Helper()
	var out struct {
		Goods goods `json:"goods"`
	}
	tn.post(t, "/api/v1/basic/goods/detail", fmt.Sprintf(`{"id":%d}`, gid), &out)
	return out.Goods
}

// ids joins ids for a JSON array.
func ids[T ~int64](list ...T) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.FormatInt(int64(v), 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func seq(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// warehouseGoods reads a goods row of the analytical store (PostgreSQL dialect).
func warehouseGoods(t testing.TB, s *stack.Stack, tenantID int64, goodsID id) (name string, categoryID, staffID int64, status string, cost float64, found bool) {
	t.Helper()
	err := s.DB.Pool.QueryRow(context.Background(), `SELECT goods_name, category_id, staff_id, status, cost FROM analytics.basic_goods
		WHERE i_tenant_id = $1 AND goods_id = $2`, tenantID, int64(goodsID)).Scan(&name, &categoryID, &staffID, &status, &cost)
	if err != nil {
		return "", 0, 0, "", 0, false
	}
	return name, categoryID, staffID, status, cost, true
}
