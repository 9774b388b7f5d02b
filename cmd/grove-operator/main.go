// grove-operator turns PodCliqueSets into PodCliques, scaling groups, pods and PodGangs, and
// hands each PodGang to the chosen scheduler backend.
package main

import (
	"fmt"
	"os"

	"github.com/ai-dynamo/grove/internal/operator/app"
)

func main() {
	if err := app.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
