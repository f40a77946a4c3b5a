"""Running a user's own pydantic-ai agent as a harness target (`pydantic-ai:MODULE:FUNCTION`).

The agent is whatever the user's factory returns; the harness owns only what a
launcher owns: which wire format the model speaks, where the conversation is
persisted between steps, and the text a step hands over for that run only.
`driver` is one step of a conversation (run as a fresh process, or in the
harness process by `in_process`); `loading` finds and checks the factory.
"""
