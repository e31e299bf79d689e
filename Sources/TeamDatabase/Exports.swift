// The replicas store and serve the sync protocol's types: whoever uses the replicas uses them too.
@_exported import SyncProtocol
