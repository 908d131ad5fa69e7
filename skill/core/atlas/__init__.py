"""The error atlas: where in the user's torch a pasted message is raised, and which sections explain it.

- :mod:`.build`: the message sites of a torch installation, parsed from its source and libraries (never imported).
- :mod:`.lookup`: the cached atlas of the target torch and matching a text against it.
- :mod:`.messages`: the messages a question holds, located and with the sections whose ``errors:`` declare them.
"""
