"""Contest.draft: a new contest is a draft until its organizers open it; the contests that exist are open."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("contest", "0024_job_kind_choices"),
    ]

    operations = [
        # Existing contests were public: they keep that (False), and only the default of new ones is True.
        migrations.AddField(
            model_name="contest",
            name="draft",
            field=models.BooleanField(default=False,
                                      help_text="seen by its organizers only until opened to the public"),
        ),
        migrations.AlterField(
            model_name="contest",
            name="draft",
            field=models.BooleanField(default=True,
                                      help_text="seen by its organizers only until opened to the public"),
        ),
    ]
