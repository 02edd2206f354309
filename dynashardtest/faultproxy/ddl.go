package faultproxy

import (
	"encoding/json"
)

// tableDef is the capacity of a table and its global secondary indexes as a
// CreateTable, UpdateTable or DeleteTable the target accepted, or the
// proxy's own DescribeTable, states it.
type tableDef struct {
	table   string
	base    *Throughput            // the table's; nil: unchanged
	indexes map[string]*Throughput // by index name; a nil value: deleted
	dropped bool                   // DeleteTable
	// described marks a DescribeTable answer, which only fills in what the
	// model does not know yet: the requests it saw pass are newer.
	described bool
}

const payPerRequest = "PAY_PER_REQUEST"

type wireThroughput struct {
	ReadCapacityUnits, WriteCapacityUnits float64
}

type wireIndex struct {
	IndexName             string
	KeySchema             keySchema
	ProvisionedThroughput *wireThroughput
}

// wireTable is a CreateTable request, or the Table of a DescribeTable
// answer: the members the proxy reads.
type wireTable struct {
	TableName              string
	KeySchema              keySchema
	BillingMode            string
	BillingModeSummary     *struct{ BillingMode string }
	ProvisionedThroughput  *wireThroughput
	GlobalSecondaryIndexes []wireIndex
}

// throughput is a table's or index's capacity: on demand when the table is,
// or when it states no provisioned figure.
func throughput(onDemand bool, w *wireThroughput) *Throughput {
	if onDemand || w == nil {
		return &Throughput{OnDemand: true}
	}
	return &Throughput{RCU: w.ReadCapacityUnits, WCU: w.WriteCapacityUnits}
}

// def is the capacity a CreateTable request states.
func (w wireTable) def() tableDef {
	onDemand := w.BillingMode == payPerRequest
	d := tableDef{table: w.TableName, base: throughput(onDemand, w.ProvisionedThroughput), indexes: map[string]*Throughput{}}
	for _, g := range w.GlobalSecondaryIndexes {
		d.indexes[g.IndexName] = throughput(onDemand, g.ProvisionedThroughput)
	}
	return d
}

// described is the capacity a DescribeTable answer states for table. Local
// servers report an on-demand table with a BillingModeSummary, or (older
// ones) with zero provisioned throughput.
func (w wireTable) described(table string) *tableDef {
	pt := w.ProvisionedThroughput
	onDemand := pt == nil || pt.ReadCapacityUnits == 0 && pt.WriteCapacityUnits == 0
	if w.BillingModeSummary != nil && w.BillingModeSummary.BillingMode != "" {
		onDemand = w.BillingModeSummary.BillingMode == payPerRequest
	}
	w.TableName, w.BillingMode = table, ""
	if onDemand {
		w.BillingMode = payPerRequest
	}
	d := w.def()
	d.described = true
	return &d
}

type wireUpdate struct {
	TableName                   string
	BillingMode                 string
	ProvisionedThroughput       *wireThroughput
	GlobalSecondaryIndexUpdates []struct {
		Create, Update *wireIndex
		Delete         *struct{ IndexName string }
	}
}

// def is the capacity an UpdateTable request changes. An index created
// without throughput belongs to an on-demand table.
func (w wireUpdate) def() tableDef {
	d := tableDef{table: w.TableName, indexes: map[string]*Throughput{}}
	switch {
	case w.BillingMode == payPerRequest:
		d.base = &Throughput{OnDemand: true}
	case w.ProvisionedThroughput != nil:
		d.base = throughput(false, w.ProvisionedThroughput)
	}
	for _, u := range w.GlobalSecondaryIndexUpdates {
		switch {
		case u.Create != nil:
			d.indexes[u.Create.IndexName] = throughput(false, u.Create.ProvisionedThroughput)
		case u.Update != nil && u.Update.ProvisionedThroughput != nil:
			d.indexes[u.Update.IndexName] = throughput(false, u.Update.ProvisionedThroughput)
		case u.Delete != nil:
			d.indexes[u.Delete.IndexName] = nil
		}
	}
	return d
}

// ddlDef reads the capacity change of a CreateTable, UpdateTable or
// DeleteTable request body; ok is false for other operations or a body it
// cannot read.
func ddlDef(op string, body []byte) (tableDef, bool) {
	var d tableDef
	switch op {
	case "CreateTable":
		var w wireTable
		if json.Unmarshal(body, &w) == nil {
			d = w.def()
		}
	case "UpdateTable":
		var w wireUpdate
		if json.Unmarshal(body, &w) == nil {
			d = w.def()
		}
	case "DeleteTable":
		var w struct{ TableName string }
		if json.Unmarshal(body, &w) == nil {
			d = tableDef{table: w.TableName, dropped: true}
		}
	}
	return d, d.table != ""
}
