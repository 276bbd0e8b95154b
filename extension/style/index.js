import './base.css';
import './schedules.css';
import './job-page.css';
import './pipelines.css';
