package runtime

import (
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// classify is the classification of t from its source k.
func (k *kindSource) classify(t *mcp.Tool) driver.Classification {
	if k.classifier != nil {
		c := k.classifier.Classify(t)
		if c.By == "" {
			c.By = driver.ClassifiedByServer
		}
		return c
	}
	return driver.ClassifyAnnotations(t)
}
