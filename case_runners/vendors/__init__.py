"""One vendor room: the vendor description (vendor.yaml), its runtime hook, the vendor folder layout, plugin loading
and calls, check-vendor, the scaffolds and the FlagPerf importer."""
