"""Keep the full-text index in step when documents are deleted (directly or by cascade
from their URL). pre_delete, because SQLite's FTS5 'delete' needs the indexed text."""

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from .backends import get_search_backend
from .models import Document


@receiver(pre_delete, sender=Document)
def remove_from_index(sender, instance, using, **kwargs):
    if instance.indexed:
        get_search_backend(using).delete([instance.id])
