package partition_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/partition"
)

// The guide's storage split: one of four partitions of a 5,000 RCU /
// 2,000 WCU table fills and splits; its halves get half its throughput and
// half its key range.
func ExampleLayout_Split() {
	l, err := partition.NewLayout(5000, 2000, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err = l.Split(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, p := range l.Partitions {
		fmt.Printf("%d: %4g RCU %3g WCU  %5.2f%% of the key space\n", i, p.RCU, p.WCU, 100*l.Ranges[i].Fraction())
	}
	// Output:
	// 0: 1250 RCU 500 WCU  25.00% of the key space
	// 1:  625 RCU 250 WCU  12.50% of the key space
	// 2: 1250 RCU 500 WCU  25.00% of the key space
	// 3: 1250 RCU 500 WCU  25.00% of the key space
	// 4:  625 RCU 250 WCU  12.50% of the key space
}

// Which partition of a four-partition table each shard of a hot day lands
// on: KeyHash places a partition-key value, Find names its partition. Four
// shards are not four partitions: .1 and .3 share partition 1 and its
// 500 WCU, and partition 3 gets none of the day.
func ExampleLayout_Find() {
	l, err := partition.NewLayout(5000, 2000, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range []string{"2014-07-09.1", "2014-07-09.2", "2014-07-09.3", "2014-07-09.4"} {
		h, err := partition.KeyHash(&types.AttributeValueMemberS{Value: k})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s → partition %d\n", k, l.Find(h))
	}
	// Output:
	// 2014-07-09.1 → partition 1
	// 2014-07-09.2 → partition 2
	// 2014-07-09.3 → partition 1
	// 2014-07-09.4 → partition 0
}
