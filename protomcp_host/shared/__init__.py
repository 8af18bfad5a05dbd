"""What several hosts of one store (`--store redis://...`) share, as records and bus messages:
modern-era tasks (`tasks.SharedTasks`), each principal's tool-list state
(`tool_lists.SharedToolLists`) and each requestState's use (`uses.SharedUses`). The formats live
here, beside the store they are written to; the store itself (`store/`) knows none of them.
May import `store`, `calls` (the task runner, used states) and `protocol` (tasks, visibility).
Imported only with a shared store."""
