package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Product is one entry of the catalogue.
type Product struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	PriceUSD    float64  `json:"price_usd_month" jsonschema:"list price per month, in US dollars"`
	Tags        []string `json:"tags"`
}

var products = []Product{
	{ID: "P-100", Name: "Standard VM", PriceUSD: 48,
		Description: "General-purpose virtual machine: 2 vCPU, 8 GiB memory, 50 GiB SSD.",
		Tags:        []string{"compute", "vm"}},
	{ID: "P-200", Name: "Managed PostgreSQL", PriceUSD: 190,
		Description: "PostgreSQL 16 with automated backups, point-in-time recovery and a hot standby.",
		Tags:        []string{"database", "postgres", "managed"}},
	{ID: "P-300", Name: "Object Storage", PriceUSD: 23,
		Description: "S3-compatible object storage; price per TiB stored, egress billed separately.",
		Tags:        []string{"storage", "s3", "backup"}},
	{ID: "P-400", Name: "Load Balancer", PriceUSD: 18,
		Description: "Layer-7 load balancer with managed TLS certificates and health checks.",
		Tags:        []string{"network", "tls", "ingress"}},
}

type (
	searchProductsIn struct {
		Query string `json:"query" jsonschema:"words to look for in product names, descriptions and tags, e.g. 'managed database'"`
	}
	searchProductsOut struct {
		Products []Product `json:"products"`
	}
	productIDIn struct {
		ID string `json:"id" jsonschema:"the product id, e.g. P-200"`
	}
)

func addCatalogTools(s *mcp.Server, keep func(string) bool) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	if keep("search_products") {
		mcp.AddTool(s, &mcp.Tool{
			Name:        "search_products",
			Description: "Search the product catalogue by keywords; returns matching products with their prices.",
			Annotations: readOnly,
		}, func(_ context.Context, _ *mcp.CallToolRequest, in searchProductsIn) (*mcp.CallToolResult, searchProductsOut, error) {
			out := searchProductsOut{Products: []Product{}}
			var lines []string
			for _, p := range products {
				if matches(in.Query, p.Name, p.Description, strings.Join(p.Tags, " ")) {
					out.Products = append(out.Products, p)
					lines = append(lines, fmt.Sprintf("%s %s ($%.2f/month): %s", p.ID, p.Name, p.PriceUSD, p.Description))
				}
			}
			if len(lines) == 0 {
				return text("No product matches %q.", in.Query), out, nil
			}
			return text("%s", strings.Join(lines, "\n")), out, nil
		})
	}
	if keep("get_product") {
		mcp.AddTool(s, &mcp.Tool{
			Name:        "get_product",
			Description: "Get one product by id.",
			Annotations: readOnly,
		}, func(_ context.Context, _ *mcp.CallToolRequest, in productIDIn) (*mcp.CallToolResult, Product, error) {
			for _, p := range products {
				if strings.EqualFold(p.ID, in.ID) {
					return text("%s %s ($%.2f/month): %s", p.ID, p.Name, p.PriceUSD, p.Description), p, nil
				}
			}
			return nil, Product{}, fmt.Errorf("no product %q; search_products lists the ids", in.ID)
		})
	}
}
